//! Measures what an idle authenticated realtime socket costs a running `metafi` process.
//!
//! Opens `--count` WebSocket connections to `/ws` from several loopback source addresses
//! (127.0.0.2, 127.0.0.3, …: each source address has its own ~28 000 ephemeral ports), each
//! with its own session token, keeps them open and answering pings, and reads the server's
//! resident memory (`VmRSS` of `/proc/<pid>/status`) before, while they are held, and after
//! they are closed. Tokens are minted with the server's session key (the server only verifies
//! the signature and expiry at connect, so no account is needed per socket).
//!
//! ```sh
//! cargo run --release -p metafi-transport --example idle_sockets -- \
//!     --pid "$(pgrep -f 'metafi serve')" --addr 127.0.0.1:7350 --count 10000
//! ```
//!
//! Options: `--pid`, `--addr`, `--count`, `--sources` (source addresses, default
//! count/25000+1), `--key` (session.encryption_key, default the published default),
//! `--hold-secs` (how long sockets stay open, default 20: one ping period and more),
//! `--concurrency` (handshakes in flight, default 256), `--format` (json or protobuf).

#![allow(clippy::print_stdout, clippy::print_stderr)] // a command-line tool's output

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use futures_util::StreamExt;
use metafi_core::{SessionClaims, TokenKeys, TokenKind};
use tokio::net::TcpSocket;
use tokio::sync::{Semaphore, watch};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

struct Options {
    pid: u32,
    addr: SocketAddr,
    count: usize,
    sources: usize,
    key: String,
    hold: Duration,
    concurrency: usize,
    format: String,
}

fn options() -> anyhow::Result<Options> {
    let mut args: HashMap<String, String> = HashMap::new();
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let Some(name) = flag.strip_prefix("--") else {
            bail!("unexpected argument {flag}");
        };
        let value = it
            .next()
            .with_context(|| format!("--{name} needs a value"))?;
        args.insert(name.to_owned(), value);
    }
    let get = |name: &str, default: &str| args.get(name).cloned().unwrap_or(default.to_owned());
    let count: usize = get("count", "10000").parse().context("--count")?;
    Ok(Options {
        pid: args
            .get("pid")
            .context("--pid <server process id> is required")?
            .parse()
            .context("--pid")?,
        addr: get("addr", "127.0.0.1:7350").parse().context("--addr")?,
        count,
        sources: get("sources", &(count / 25_000 + 1).to_string())
            .parse()
            .context("--sources")?,
        key: get("key", "defaultencryptionkey"),
        hold: Duration::from_secs(get("hold-secs", "20").parse().context("--hold-secs")?),
        concurrency: get("concurrency", "256").parse().context("--concurrency")?,
        format: get("format", "json"),
    })
}

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS line")
}

/// CPU time a process used so far (user + system), in clock ticks (`/proc/<pid>/stat`).
fn cpu_ticks(pid: u32) -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')').context("malformed stat")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11).context("utime")?.parse()?;
    let stime: u64 = fields.get(12).context("stime")?.parse()?;
    Ok(utime + stime)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let o = options()?;
    // The refresh key is irrelevant here: only session tokens are minted.
    let keys = TokenKeys::new(o.key.as_bytes(), b"unused-refresh-key");
    let expires_at = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() as i64 + 86_400;

    let before = rss_kib(o.pid)?;
    println!(
        "server pid {} RSS before: {before} KiB; opening {} sockets from {} source addresses",
        o.pid, o.count, o.sources
    );

    let (stop_tx, stop_rx) = watch::channel(false);
    let open = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(Semaphore::new(o.concurrency));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(o.count);
    for i in 0..o.count {
        let claims = SessionClaims {
            session_id: uuid::Uuid::new_v4(),
            user_id: uuid::Uuid::new_v4(),
            username: format!("idle{i}"),
            vars: HashMap::new(),
            expires_at,
            issued_at: expires_at - 86_400,
        };
        let token = keys.sign(TokenKind::Session, &claims)?;
        let source = Ipv4Addr::new(127, 0, 0, 2 + (i % o.sources) as u8);
        let url = format!("ws://{}/ws?token={token}&format={}", o.addr, o.format);
        let permit = gate.clone().acquire_owned().await?;
        let (addr, open, failed, mut stop) =
            (o.addr, open.clone(), failed.clone(), stop_rx.clone());
        tasks.push(tokio::spawn(async move {
            let connected = async {
                let socket = TcpSocket::new_v4()?;
                socket.bind(SocketAddr::V4(SocketAddrV4::new(source, 0)))?;
                let stream = socket.connect(addr).await?;
                let config = WebSocketConfig::default()
                    .read_buffer_size(4096)
                    .write_buffer_size(0);
                let (ws, _) =
                    tokio_tungstenite::client_async_with_config(url, stream, Some(config)).await?;
                anyhow::Ok(ws)
            }
            .await;
            drop(permit);
            let mut ws = match connected {
                Ok(ws) => ws,
                Err(e) => {
                    if failed.fetch_add(1, Ordering::Relaxed) < 5 {
                        eprintln!("connect failed: {e:#}");
                    }
                    return;
                }
            };
            open.fetch_add(1, Ordering::Relaxed);
            // Read (answering the server's pings) until told to stop.
            loop {
                tokio::select! {
                    _ = stop.changed() => break,
                    frame = ws.next() => if frame.is_none_or(|f| f.is_err()) { break },
                }
            }
            let _ = ws.close(None).await;
        }));
    }
    while open.load(Ordering::Relaxed) + failed.load(Ordering::Relaxed) < o.count {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let connected = open.load(Ordering::Relaxed);
    println!(
        "{connected} sockets open, {} failed, in {:.1} s",
        failed.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
    if connected == 0 {
        bail!("no socket could connect");
    }

    // Hold them through at least one ping period, sampling the server's memory.
    let mut peak = 0;
    let (cpu_start, hold_start) = (cpu_ticks(o.pid)?, Instant::now());
    let hold_until = Instant::now() + o.hold;
    while Instant::now() < hold_until {
        tokio::time::sleep(Duration::from_secs(1)).await;
        peak = peak.max(rss_kib(o.pid)?);
    }
    let held = rss_kib(o.pid)?;
    // Clock ticks are 1/100 s on Linux (USER_HZ).
    let cpu_percent = (cpu_ticks(o.pid)? - cpu_start) as f64 / hold_start.elapsed().as_secs_f64();
    let still_open = open.load(Ordering::Relaxed);
    let _ = stop_tx.send(true);
    for task in tasks {
        let _ = task.await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = rss_kib(o.pid)?;

    let delta = held.saturating_sub(before);
    println!("server RSS held: {held} KiB (peak {peak} KiB), after close: {after} KiB");
    println!(
        "RESULT sockets={connected} rss_before_kib={before} rss_held_kib={held} rss_peak_kib={peak} \
         rss_after_close_kib={after} bytes_per_socket={} peak_bytes_per_socket={}",
        delta * 1024 / connected as u64,
        peak.saturating_sub(before) * 1024 / connected as u64
    );
    println!("server CPU while holding idle sockets: {cpu_percent:.1}% of one core");
    if still_open < connected {
        println!(
            "warning: {} sockets closed while held",
            connected - still_open
        );
    }
    Ok(())
}

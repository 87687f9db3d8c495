//! `metafi-transport-bench`: the seed's transport experiment (`shared/seeds/002_…`) on real
//! network stacks. `trace` writes a synthetic game trace from the seed's statistics; `run`
//! replays it with one strategy (WebSocket over kernel TCP, or QUIC with per-type delivery
//! classes) against a server running the `transport_seed` module and writes what it measured;
//! `report` turns many runs into tables and SVG charts. `scripts/transport-experiment.sh` runs
//! it all inside network namespaces joined by `metafi-linkemu`; see `docs/TRANSPORT.md`.
//!
//! Must not depend on: server crates (it speaks only the wire protocol, through
//! `metafi-client`; the `transport_seed` message layout comes from `metafi-examples-native`,
//! the server module it talks to). Key modules: `trace`, `strategy`, `replay`, `stats`, `report`.

mod connect;
mod replay;
mod report;
mod stats;
mod storm;
mod strategy;
mod trace;
mod wire;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

use crate::replay::RunOptions;
use crate::strategy::Strategy;
use crate::trace::{Trace, TraceParams};

#[derive(Debug, Parser)]
#[command(
    name = "metafi-transport-bench",
    version,
    about = "The seed's transport experiment: traces, replay per strategy, GSI reports"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Generate a trace from the seed's statistics and write it as JSON.
    Trace {
        #[arg(long)]
        clients: u16,
        /// Trace length.
        #[arg(long, value_parser = parse_duration, default_value = "30s")]
        duration: Duration,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Long-run messages per second per player.
        #[arg(long, default_value_t = 1.0)]
        rate: f64,
        /// Mean messages per burst of activity.
        #[arg(long, default_value_t = 4.0)]
        burst: f64,
        /// Messages per second within a burst (the seed's exponential fit).
        #[arg(long, default_value_t = 8.0)]
        burst_rate: f64,
        /// Side of the square world.
        #[arg(long, default_value_t = 1000.0)]
        world: f64,
        /// Radius of the area of interest.
        #[arg(long, default_value_t = 150.0)]
        aoi: f64,
        #[arg(long)]
        out: PathBuf,
    },
    /// Replay a trace with one strategy and write the measurements as JSON.
    Run {
        #[arg(long)]
        trace: PathBuf,
        /// tcp, quic1, mro, mr, m, best or unreliable.
        #[arg(long)]
        strategy: Strategy,
        /// The server's HTTP address.
        #[arg(long, default_value = "http://127.0.0.1:7350")]
        server: String,
        #[arg(long, default_value = "defaultkey")]
        server_key: String,
        /// The server's QUIC listener (UDP), for QUIC strategies.
        #[arg(long)]
        quic: Option<SocketAddr>,
        /// The server certificate's SHA-256 fingerprint (64 hex digits), or @FILE to read it.
        #[arg(long)]
        quic_fingerprint: Option<String>,
        /// Client-side QUIC knobs, named as the server's `[quic]` keys: e.g.
        /// redundancy_copies=1,max_ack_delay_ms=5 (the server's own come from its config).
        #[arg(long, value_parser = parse_pairs, default_value = "")]
        quic_tuning: Pairs,
        /// Player i connects from this address + i.
        #[arg(long)]
        first_source: Option<Ipv4Addr>,
        /// Ticks per second of the server module.
        #[arg(long, default_value_t = 128)]
        tick_rate: u32,
        /// How long to wait for late messages after the last one is sent.
        #[arg(long, value_parser = parse_duration, default_value = "4s")]
        drain: Duration,
        /// Players signing in or joining at once.
        #[arg(long, default_value_t = 16)]
        setup_concurrency: usize,
        /// Longest wait for one answer (joins wait behind other players' announcements).
        #[arg(long, value_parser = parse_duration, default_value = "120s")]
        timeout: Duration,
        /// Longest wait, after joining, for every player to hear of every other one.
        #[arg(long, value_parser = parse_duration, default_value = "180s")]
        settle_timeout: Duration,
        /// Prefix of the players' device ids.
        #[arg(long, default_value = "transport-bench")]
        device_prefix: String,
        /// metafi-linkemu's process id, when it runs with --setup-link: it is switched to the
        /// setup link for signing in and joining, and to the measured links for the replay.
        #[arg(long)]
        emulator_pid: Option<u32>,
        /// Write the result here (JSON).
        #[arg(long)]
        out: PathBuf,
        /// Worker threads (default: the CPUs the process may use).
        #[arg(long)]
        threads: Option<usize>,
    },
    /// Open every player's connection at the same moment and report how long each took.
    Storm {
        #[arg(long, default_value_t = 150)]
        players: usize,
        /// tcp (the WebSocket) or any QUIC strategy (only the transport matters).
        #[arg(long, default_value = "m")]
        strategy: Strategy,
        #[arg(long, default_value = "http://127.0.0.1:7350")]
        server: String,
        #[arg(long, default_value = "defaultkey")]
        server_key: String,
        #[arg(long)]
        quic: Option<SocketAddr>,
        /// The certificate's fingerprint, or @FILE.
        #[arg(long)]
        quic_fingerprint: Option<String>,
        #[arg(long)]
        first_source: Option<Ipv4Addr>,
        /// metafi-linkemu's process id: sign-ins use its setup link, connections the measured ones.
        #[arg(long)]
        emulator_pid: Option<u32>,
        #[arg(long, value_parser = parse_duration, default_value = "120s")]
        timeout: Duration,
        #[arg(long, default_value = "transport-bench")]
        device_prefix: String,
        #[arg(long)]
        out: PathBuf,
    },
    /// Aggregate run results (*.json in a directory) into report.md and SVG charts.
    Report {
        #[arg(long)]
        results: PathBuf,
        #[arg(long)]
        out: PathBuf,
        /// Extra text for the report's header (e.g. the hardware).
        #[arg(long, default_value = "")]
        note: String,
    },
}

/// `key=value` pairs separated by commas.
#[derive(Debug, Clone, Default)]
struct Pairs(Vec<(String, String)>);

fn parse_pairs(text: &str) -> Result<Pairs, String> {
    text.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|pair| {
            pair.split_once('=')
                .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
                .ok_or_else(|| format!("`{pair}` is not key=value"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Pairs)
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60.0)
    } else {
        return Err(format!("duration `{text}` needs a unit: ms, s or m"));
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("duration `{text}` is not a number"))?;
    if !(value.is_finite() && value >= 0.0) {
        return Err(format!("duration `{text}` must be non-negative"));
    }
    Ok(Duration::from_secs_f64(value * scale))
}

/// A fingerprint given as text or as @FILE.
fn read_fingerprint(flag: Option<String>) -> anyhow::Result<Option<String>> {
    let Some(text) = flag else {
        return Ok(None);
    };
    Ok(Some(match text.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("reading the fingerprint file {path}"))?
            .trim()
            .to_owned(),
        None => text,
    }))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("METAFI_BENCH_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    match execute(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            #[allow(clippy::print_stderr)] // user-facing error output of the binary
            {
                eprintln!("metafi-transport-bench: {e:#}");
            }
            ExitCode::FAILURE
        }
    }
}

#[allow(clippy::print_stdout)] // one summary line per command is the tool's output
fn execute(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Trace {
            clients,
            duration,
            seed,
            rate,
            burst,
            burst_rate,
            world,
            aoi,
            out,
        } => {
            let trace = Trace::generate(&TraceParams {
                clients,
                duration_s: duration.as_secs_f64(),
                seed,
                rate,
                burst,
                burst_rate,
                world,
                aoi,
                mix: [0.84, 0.12, 0.04],
            })?;
            trace.write(&out)?;
            let mix = trace.mix();
            println!(
                "trace: {clients} players, {} messages (move {}, attack {}, talk {}) in {:.0} s → {}",
                trace.messages(),
                mix[0],
                mix[1],
                mix[2],
                duration.as_secs_f64(),
                out.display()
            );
            Ok(())
        }
        Command::Run {
            trace,
            strategy,
            server,
            server_key,
            quic,
            quic_fingerprint,
            quic_tuning,
            first_source,
            tick_rate,
            drain,
            setup_concurrency,
            timeout,
            settle_timeout,
            device_prefix,
            emulator_pid,
            out,
            threads,
        } => {
            let quic_fingerprint = read_fingerprint(quic_fingerprint)?;
            let options = RunOptions {
                trace,
                strategy,
                server,
                server_key,
                quic,
                quic_fingerprint,
                quic_tuning: quic_tuning.0,
                first_source,
                tick_rate,
                drain,
                setup_concurrency,
                settle_timeout,
                timeout,
                device_prefix,
                emulator_pid,
            };
            replay::check(&options)?;
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            if let Some(threads) = threads {
                builder.worker_threads(threads.max(1));
            }
            let runtime = builder.enable_all().build()?;
            let result = runtime.block_on(replay::run(&options))?;
            let json = serde_json::to_string_pretty(&result)?;
            std::fs::write(&out, json).with_context(|| format!("writing {}", out.display()))?;
            let c = &result.client_messages[3];
            let s = &result.server_messages[3];
            println!(
                "{} {} players seed {}: client msgs {:.1} ms ± {:.1} loss {:.2}% | server msgs {:.1} ms ± {:.1} loss {:.2}% | GSI {:.4} | late ≤ {:.1} ms",
                result.strategy,
                result.clients,
                result.seed,
                c.delay_ms,
                c.jitter_ms,
                c.loss * 100.0,
                s.delay_ms,
                s.jitter_ms,
                s.loss * 100.0,
                result.gsi_client,
                result.max_send_lateness_ms
            );
            Ok(())
        }
        Command::Storm {
            players,
            strategy,
            server,
            server_key,
            quic,
            quic_fingerprint,
            first_source,
            emulator_pid,
            timeout,
            device_prefix,
            out,
        } => {
            let options = RunOptions {
                trace: PathBuf::new(),
                strategy,
                server,
                server_key,
                quic,
                quic_fingerprint: read_fingerprint(quic_fingerprint)?,
                quic_tuning: Vec::new(),
                first_source,
                tick_rate: 128,
                drain: Duration::ZERO,
                setup_concurrency: 64,
                settle_timeout: timeout,
                timeout,
                device_prefix,
                emulator_pid,
            };
            replay::check(&options)?;
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()?;
            let result = runtime.block_on(storm::storm(&options, players))?;
            std::fs::write(&out, serde_json::to_string_pretty(&result)?)
                .with_context(|| format!("writing {}", out.display()))?;
            println!(
                "storm over {}: {}/{} connected, median {:.2} s, slowest {:.2} s{}",
                result.transport,
                result.connected,
                result.players,
                result.median_s,
                result.max_s,
                result
                    .failures
                    .first()
                    .map(|f| format!("; first failure: {f}"))
                    .unwrap_or_default()
            );
            Ok(())
        }
        Command::Report { results, out, note } => report::write(&results, &out, &note),
    }
}

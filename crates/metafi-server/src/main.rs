//! The `metafi` command line.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use metafi_server::config::{self, Config, DEFAULT_TOML, Sources};
use metafi_server::{Listeners, Node, telemetry};

/// The server's allocator: mimalloc instead of the system's. Every request allocates (JSON,
/// hyper buffers, script values; LuaJIT's memory comes through Rust's allocator too) and
/// glibc's malloc was 15–20 % of the server's CPU on device sign-in with script hooks (perf,
/// docs/BENCHMARKS.md "Allocator"). mimalloc is small (one C file, seconds to build), widely
/// used and kept up; C libraries that call `malloc` themselves (SQLite, QuickJS) still use
/// the system's. Asked through its unaligned fast path where the layout allows
/// (`metafi_core::ServerAllocator`).
#[global_allocator]
static ALLOCATOR: metafi_core::ServerAllocator = metafi_core::ServerAllocator;

#[derive(Debug, Parser)]
#[command(name = "metafi", version, about = "MetaFi multiplayer game server")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the server.
    Serve(ConfigArgs),
    /// Configuration tools.
    #[command(subcommand)]
    Config(ConfigCommand),
}

#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process: the size is irrelevant
enum ConfigCommand {
    /// Print the annotated default configuration (a valid config file).
    Default,
    /// Print the effective configuration after every layer, secrets hidden, and check it.
    Show(ConfigArgs),
}

/// Where configuration comes from. Flags override environment variables, which override the file.
#[derive(Debug, Args)]
struct ConfigArgs {
    /// TOML configuration file (also METAFI_CONFIG).
    #[arg(long, short = 'c', value_name = "FILE")]
    config: Option<PathBuf>,
    /// Listen address of the API and socket (socket.address).
    #[arg(long, value_name = "IP")]
    address: Option<String>,
    /// Listen port of the API and socket (socket.port).
    #[arg(long, value_name = "PORT")]
    port: Option<u16>,
    /// Data directory: SQLite database and modules (data_dir).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<String>,
    /// Database URL: empty for SQLite in the data directory, or postgres://… (database.url).
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
    /// Metrics port (metrics.port).
    #[arg(long, value_name = "PORT")]
    metrics_port: Option<u16>,
    /// Console port (console.port).
    #[arg(long, value_name = "PORT")]
    console_port: Option<u16>,
    /// UDP port of the QUIC transport (quic.port).
    #[arg(long, value_name = "PORT")]
    quic_port: Option<u16>,
    /// Node name (name).
    #[arg(long)]
    name: Option<String>,
    /// Join a cluster over NATS, e.g. nats://127.0.0.1:4222 (cluster.url; needs PostgreSQL).
    #[arg(long, value_name = "URL")]
    cluster: Option<String>,
    /// This node's name in the cluster, unique (name; the same as --name).
    #[arg(long, value_name = "NAME", conflicts_with = "name")]
    node: Option<String>,
    /// Set any key, e.g. --set session.token_expiry_sec=7200 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

impl ConfigArgs {
    fn load(&self) -> anyhow::Result<Config> {
        let file = self
            .config
            .clone()
            .or_else(|| std::env::var_os("METAFI_CONFIG").map(PathBuf::from));
        let mut overrides = Vec::new();
        let mut flag = |key: &str, value: Option<String>| {
            if let Some(value) = value {
                overrides.push((key.to_owned(), value));
            }
        };
        flag("socket.address", self.address.clone());
        flag("socket.port", self.port.map(|p| p.to_string()));
        flag("data_dir", self.data_dir.clone());
        flag("database.url", self.database_url.clone());
        flag("metrics.port", self.metrics_port.map(|p| p.to_string()));
        flag("quic.port", self.quic_port.map(|p| p.to_string()));
        flag("console.port", self.console_port.map(|p| p.to_string()));
        flag("name", self.name.clone().or_else(|| self.node.clone()));
        flag("cluster.url", self.cluster.clone());
        for pair in &self.set {
            let (key, value) = pair
                .split_once('=')
                .with_context(|| format!("--set {pair}: expected KEY=VALUE"))?;
            overrides.push((key.trim().to_owned(), value.to_owned()));
        }
        let raw = config::load(&Sources {
            file: file.as_deref(),
            env: std::env::vars().collect(),
            overrides,
        })?;
        Config::try_from(raw)
    }
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            #[allow(clippy::print_stderr)] // user-facing error output of the binary
            {
                eprintln!("metafi: {e:#}");
            }
            std::process::ExitCode::FAILURE
        }
    }
}

#[allow(clippy::print_stdout)] // user-facing output of the binary
fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Config(ConfigCommand::Default) => {
            print!("{DEFAULT_TOML}");
            Ok(())
        }
        Command::Config(ConfigCommand::Show(args)) => {
            let config = args.load()?;
            let raw = config.raw.redacted();
            print!(
                "{}",
                toml::to_string(&raw).context("rendering the configuration")?
            );
            Ok(())
        }
        Command::Serve(args) => {
            let config = args.load()?;
            telemetry::init_logging(&config.logger);
            // The recorder first: a metric set before it exists is lost (the cluster's gauges
            // are set while the node starts, e.g. the sessions a joining node learns).
            let _ = telemetry::metrics_handle();
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_name("metafi-io")
                .build()
                .context("starting the async runtime")?;
            runtime.block_on(async move {
                let grace = config.shutdown_grace;
                let listeners = Listeners::bind(&config).await?;
                let node = Node::start(config, listeners).await?;
                // SIGTERM and an operator's drain (`POST /v2/metafi/drain`) stop the node the
                // same way: no new matches or sockets, matches get match_terminate(grace).
                let drain = node.drain_requested();
                tokio::select! {
                    () = shutdown_signal() => {}
                    () = drain => tracing::info!("drain requested by an operator"),
                }
                node.stop(grace).await;
                Ok(())
            })
        }
    }
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => tracing::info!("received SIGINT"),
        _ = terminate => tracing::info!("received SIGTERM"),
    }
}

//! `metafi-linkemu`: joins a server namespace and a client namespace through emulated links
//! (`run`), and measures a path with UDP probes (`probe-echo`, `probe`). Needs root (or
//! CAP_NET_ADMIN) and `/dev/net/tun`; the namespaces are made by the caller (`ip netns add`),
//! see `scripts/transport-experiment.sh`.

mod probe;
mod run;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use metafi_linkemu::LinkSpec;

#[derive(Debug, Parser)]
#[command(
    name = "metafi-linkemu",
    version,
    about = "User-space link emulator between two network namespaces (TUN devices), and UDP probes",
    after_help = "Link specs: rate=600kbit,delay=70ms,jitter=0ms,loss=4%,queue=50p (rate may be a \
                  range, 64kbit-128kbit, drawn per client; loss may be ge:P:R:GOOD:BAD). \
                  See docs/TRANSPORT.md."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a TUN device in each namespace, address and route them, and forward packets
    /// through the emulated links until SIGINT/SIGTERM; print statistics at exit.
    Run(Box<RunArgs>),
    /// Answer UDP probes (echo every datagram back) on an address.
    ProbeEcho {
        #[arg(long)]
        bind: SocketAddr,
        /// Stop after this long.
        #[arg(long, value_parser = parse_duration, default_value = "60s")]
        duration: Duration,
    },
    /// Send UDP probes to a `probe-echo` and print round-trip times and loss as JSON.
    Probe {
        #[arg(long)]
        to: SocketAddr,
        /// Local address to send from (e.g. one client's address).
        #[arg(long)]
        from: Option<Ipv4Addr>,
        #[arg(long, default_value_t = 20)]
        count: u32,
        #[arg(long, value_parser = parse_duration, default_value = "50ms")]
        interval: Duration,
        /// Datagram payload size in bytes (at least 12).
        #[arg(long, default_value_t = 100)]
        size: usize,
        /// How long to wait for the last answer.
        #[arg(long, value_parser = parse_duration, default_value = "3s")]
        wait: Duration,
    },
}

/// `run`'s flags. Defaults are the seed's setup (`shared/seeds/002_…`, section 5.3).
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Network namespace of the server (must exist).
    #[arg(long)]
    pub server_ns: String,
    /// Network namespace of the clients (must exist).
    #[arg(long)]
    pub client_ns: String,
    /// The server's address (in the server namespace).
    #[arg(long, default_value = "10.77.0.1")]
    pub server_addr: Ipv4Addr,
    /// First client address; clients get this and the next ones (`--clients` of them), each
    /// with its own access link.
    #[arg(long, default_value = "10.77.1.1")]
    pub first_client: Ipv4Addr,
    /// Client addresses to add to the client namespace.
    #[arg(long, default_value_t = 150)]
    pub clients: u32,
    /// Client access links, client → router.
    #[arg(
        long,
        default_value = "rate=64kbit-128kbit,delay=70ms,loss=4%,queue=50p"
    )]
    pub client_up: LinkSpec,
    /// Client access links, router → client.
    #[arg(
        long,
        default_value = "rate=64kbit-128kbit,delay=70ms,loss=4%,queue=50p"
    )]
    pub client_down: LinkSpec,
    /// The server's shared link, router → server.
    #[arg(long, default_value = "rate=600kbit,delay=70ms,queue=50p")]
    pub server_up: LinkSpec,
    /// The server's shared link, server → router.
    #[arg(long, default_value = "rate=600kbit,delay=70ms,queue=50p")]
    pub server_down: LinkSpec,
    /// Seeds every random decision (rates drawn per client, loss, jitter).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A link for every hop while setting up (e.g. `rate=unlimited,delay=70ms,queue=unlimited`):
    /// the emulator starts with it, not counting traffic, switches to the measured links on
    /// SIGUSR1 and back on SIGUSR2. Without it the measured links apply from the start.
    #[arg(long)]
    pub setup_link: Option<LinkSpec>,
    /// Name of the TUN device in the server namespace.
    #[arg(long, default_value = "lemu-srv")]
    pub server_dev: String,
    /// Name of the TUN device in the client namespace.
    #[arg(long, default_value = "lemu-cli")]
    pub client_dev: String,
    /// Write the statistics as JSON here at exit (they are printed as text too).
    #[arg(long)]
    pub stats: Option<PathBuf>,
    /// Create this file once the devices are up and forwarding (for scripts to wait on).
    #[arg(long)]
    pub ready_file: Option<PathBuf>,
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    metafi_linkemu::spec::parse_duration(text).map(Duration::from_nanos)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return fail(&anyhow::anyhow!("cannot start the runtime: {e}")),
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Run(args) => run::run(*args).await,
            Command::ProbeEcho { bind, duration } => probe::echo(bind, duration).await,
            Command::Probe {
                to,
                from,
                count,
                interval,
                size,
                wait,
            } => probe::probe(to, from, count, interval, size, wait).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

fn fail(error: &anyhow::Error) -> ExitCode {
    #[allow(clippy::print_stderr)] // user-facing error output of the binary
    {
        eprintln!("metafi-linkemu: {error:#}");
    }
    ExitCode::FAILURE
}

//! The command line: one subcommand per workload, the same load, target and output flags on
//! each.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::phases::{LoadModel, Phase};
use crate::units::parse_duration;

#[derive(Debug, Parser)]
#[command(
    name = "metafi-bench",
    version,
    about = "Load tool: the seed's workloads against MetaFi or any Nakama-compatible server",
    after_help = "Load model: --phase RATE:DURATION (repeatable) starts new users on a schedule; \
                  --clients N runs N users in a closed loop for --duration. Every run stops on its \
                  own; Ctrl-C stops early and still prints the partial report. See docs/BENCH.md."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Authenticate, open the realtime socket and keep it open; ramp to a number of connected users.
    Ccu {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        socket: SocketArgs,
        /// How long each user keeps its socket open (the run's end closes it earlier).
        #[arg(long, value_parser = parse_duration, default_value = "200s")]
        hold: Duration,
    },
    /// Device authentication with create=true for new device ids (a database write each).
    Register {
        #[command(flatten)]
        common: Common,
    },
    /// Device authentication of existing users (created first, not measured).
    Auth {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        users: UserArgs,
    },
    /// Call an RPC by id with a JSON payload, over REST (or the socket with --socket).
    Rpc {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        users: UserArgs,
        /// The RPC id, e.g. echo (Lua), echo_js, echo_native.
        #[arg(long, default_value = "echo")]
        id: String,
        /// The payload: the function's input text.
        #[arg(long, default_value = r#"{"message":"hello from metafi-bench"}"#)]
        payload: String,
        /// Do not check that the answer equals the payload (for RPCs that are not echoes).
        #[arg(long)]
        no_verify_echo: bool,
        /// Calls per user in arrival mode (closed-loop users call until the end).
        #[arg(long, default_value_t = 1)]
        calls: u64,
        /// Call over the realtime socket instead of REST.
        #[arg(long)]
        socket: bool,
        #[command(flatten)]
        socket_args: SocketArgs,
    },
    /// Score submissions and records-around-owner reads on a leaderboard filled first (not
    /// measured) through an RPC; the server needs examples/lua/leaderboard.lua or the like.
    Leaderboard {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        users: UserArgs,
        /// The board to write to (server code creates it).
        #[arg(long, default_value = "bench")]
        board: String,
        /// Records to add before the run (through --seed-rpc, 10,000 per call).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// The RPC that adds `{"id": board, "count": n}` records.
        #[arg(long, default_value = "leaderboard_seed")]
        seed_rpc: String,
        /// One records-around-owner read after this many writes of a user.
        #[arg(long, default_value_t = 1)]
        around_every: u64,
        /// Records per around-owner read (1–100).
        #[arg(long, default_value_t = 10)]
        around_limit: u32,
    },
    /// The seed's workload 7: authenticate, RPC get_match, open the socket, join the match, then
    /// alternate echo and broadcast messages every interval; measures delivery latency.
    Match {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        users: UserArgs,
        #[command(flatten)]
        socket: SocketArgs,
        /// The RPC that returns the id of a match that is not full.
        #[arg(long, default_value = "get_match")]
        rpc: String,
        /// How long each user plays.
        #[arg(long, value_parser = parse_duration, default_value = "180s")]
        hold: Duration,
        /// Time between two messages of one user.
        #[arg(long, value_parser = parse_duration, default_value = "500ms")]
        interval: Duration,
        /// Opcode the server echoes back to the sender.
        #[arg(long, default_value_t = 1)]
        echo_opcode: i64,
        /// Opcode the server broadcasts to every player of the match.
        #[arg(long, default_value_t = 2)]
        broadcast_opcode: i64,
        /// Payload length of echo messages, in characters.
        #[arg(long, default_value_t = 44)]
        echo_size: usize,
        /// Payload length of broadcast messages, in characters.
        #[arg(long, default_value_t = 35)]
        broadcast_size: usize,
        /// Place players instead of finding matches: the matches are made on every node first
        /// (--create-rpc), and this share of each node's players (0 to 1) joins a match of the
        /// next node by id, the rest one of their own node's.
        #[arg(long, value_parser = parse_share)]
        cross_node: Option<f64>,
        /// With --cross-node: the RPC that creates a match on the node it is called on.
        #[arg(long, default_value = "create_match")]
        create_rpc: String,
        /// With --cross-node: players per match.
        #[arg(long, default_value_t = 10)]
        match_size: u64,
    },
    /// Bots in a served world (docs/WORLD.md): authenticate, join the world, send generated
    /// bot commands with acknowledgements; measures snapshots per bot per second, command →
    /// first snapshot applying it, bytes per bot.
    World {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        users: UserArgs,
        #[command(flatten)]
        socket: SocketArgs,
        /// The world's match id; default: the first world in the match listing.
        #[arg(long, default_value = "")]
        world: String,
        /// Map the bots' tracks are generated on (as the server's world.map: arena, open,
        /// open:N or a file); "open" is sized for --users.
        #[arg(long, default_value = "arena")]
        map: String,
        /// Seed of the generated map and tracks.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Bot behaviour: roam, hunt, camp, converge or mixed.
        #[arg(long, default_value = "mixed")]
        behaviour: String,
        /// Time between two commands of one bot (one per tick at 20 ticks/s).
        #[arg(long, value_parser = parse_duration, default_value = "50ms")]
        command_interval: Duration,
        /// How long each bot plays.
        #[arg(long, value_parser = parse_duration, default_value = "180s")]
        hold: Duration,
        /// The server's metrics listener (metafi's --metrics-port, e.g. http://127.0.0.1:9100):
        /// its GET /debug/worlds is read once a second in the measured phase (the load model's
        /// last phase), while the bots are in; the report gives the world's tick phases,
        /// dropped snapshots and acknowledgement age over that phase. With --server-pid, the
        /// server's CPU by thread and its simulation / network split too.
        #[arg(long, value_name = "URL")]
        server_metrics: Option<String>,
    },
    /// Serve the floor of the `rpc` and `match` workloads: device sign-in, `POST /v2/rpc/{id}`
    /// and the socket's RPC answered by MetaFi's network stack (tokio, hyper, tungstenite) with
    /// no server logic, and the seed match's seats, joins and once-a-tick deliveries with no
    /// match logic, so a run against it measures what any server on this stack pays per call or
    /// delivered message (docs/BENCHMARKS.md, "The floor of the RPC rows", "The seed match
    /// beside Nakama"). Runs until Ctrl-C.
    Floor {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:7390")]
        listen: std::net::SocketAddr,
    },
    /// SVG charts of a bot-count sweep from the report.json files of `world` runs (their
    /// measured-phase figures): response rate, command → snapshot p50/p99 and the server's CPU
    /// split against the number of bots (scripts/bench_world.sh writes them).
    WorldCharts {
        /// Directory the charts are written to.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Title suffix, e.g. "server on core 0, bots on core 1".
        #[arg(long, default_value = "")]
        label: String,
        /// The runs' report.json files, any order.
        #[arg(required = true, value_name = "REPORT")]
        reports: Vec<PathBuf>,
    },
    /// Pairs of players in relayed matches (no tick), half of the pairs on one node and half
    /// across two nodes: the latency of a message between players on one node against one that
    /// crosses nodes (series same_node and cross_node).
    Relay {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        socket: SocketArgs,
        /// How long each player plays.
        #[arg(long, value_parser = parse_duration, default_value = "30s")]
        hold: Duration,
        /// Time between two messages of one player.
        #[arg(long, value_parser = parse_duration, default_value = "100ms")]
        interval: Duration,
        /// Payload length, in characters.
        #[arg(long, default_value_t = 44)]
        size: usize,
        /// How long the second player of a pair waits before joining the pair's match.
        #[arg(long, value_parser = parse_duration, default_value = "500ms")]
        join_delay: Duration,
    },
    /// The ESL consolidation benchmark: 12-player matches at 64 or 128 ticks/s (inputs of
    /// 40–200 bytes every tick, a ~2,000-byte state update every tick), added step by step
    /// until the node refuses ("Node is full") or --max-matches; per step players, matches,
    /// server CPU, input → update latency and the node's load. The load-model flags (--phase,
    /// --clients, --duration) do not apply. Needs a metafi built with `--features examples`.
    Esl {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        socket: SocketArgs,
        /// The RPC that creates an ESL match from its JSON parameters.
        #[arg(long, default_value = "esl_create_native")]
        rpc: String,
        /// Ticks per second of every match: 64 or 128.
        #[arg(long, default_value_t = 64, value_parser = parse_tick_rate)]
        tick_rate: u32,
        /// Stop after this many matches even if the node still takes more.
        #[arg(long, default_value_t = 1000)]
        max_matches: u64,
        /// Matches added per step.
        #[arg(long, default_value_t = 1)]
        matches_per_step: u64,
        /// Measured length of a step.
        #[arg(long, value_parser = parse_duration, default_value = "10s")]
        step: Duration,
        /// Wait after a step's new matches are full before measuring.
        #[arg(long, value_parser = parse_duration, default_value = "2s")]
        warmup: Duration,
        /// How many matches (the first ones) burn 10x the game logic's CPU per tick.
        #[arg(long, default_value_t = 0)]
        expensive: u64,
        /// Share of the matches, spread evenly over the run, that burn 10x (0 to 1; 0.25:
        /// every fourth match). Latency is also reported for cheap and expensive matches apart.
        #[arg(long, default_value_t = 0.0, value_parser = parse_share)]
        mix: f64,
        /// Bytes of the state update sent to every player every tick.
        #[arg(long, default_value_t = 2000)]
        state_size: usize,
        /// Smallest input, bytes.
        #[arg(long, default_value_t = 40)]
        input_min: usize,
        /// Largest input, bytes.
        #[arg(long, default_value_t = 200)]
        input_max: usize,
        /// Rounds of simulated game logic per tick (a cheap mixing function; the match's CPU
        /// beyond receiving inputs and sending updates).
        #[arg(long, default_value_t = 20_000)]
        work: u64,
    },
}

/// Target, load model, limits and output: the same on every workload.
#[derive(Debug, Clone, Args)]
pub struct Common {
    /// Server to measure, http://host:port (MetaFi, Nakama or any Nakama-compatible server).
    /// Several (the nodes of a cluster): a comma-separated list or the flag repeated; users are
    /// spread over them round-robin and the report counts each one's users.
    #[arg(
        long = "server",
        value_name = "URL",
        value_delimiter = ',',
        default_value = "http://127.0.0.1:7350",
        env = "METAFI_BENCH_SERVER"
    )]
    pub servers: Vec<String>,
    /// Server key (HTTP basic-auth username of the authenticate calls).
    #[arg(long, default_value = "defaultkey", env = "METAFI_BENCH_SERVER_KEY")]
    pub server_key: String,
    /// Arrival phase: RATE new users per second for DURATION, e.g. 500:30s. Repeat for
    /// several phases, run one after another.
    #[arg(
        long = "phase",
        value_name = "RATE:DURATION",
        conflicts_with = "clients"
    )]
    pub phases: Vec<Phase>,
    /// Closed loop: this many users at once, each repeating its script until --duration ends.
    #[arg(long)]
    pub clients: Option<u64>,
    /// Length of a closed-loop run.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub duration: Duration,
    /// Longest wait for one answer, connection included.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub timeout: Duration,
    /// Local source addresses to spread connections over: a list and/or ranges, e.g.
    /// 127.0.0.1-127.0.0.8. Each has ~28k ephemeral ports towards one server.
    #[arg(long, value_name = "LIST", conflicts_with = "source_count")]
    pub sources: Option<String>,
    /// Shorthand for --sources 127.0.0.1-127.0.0.N.
    #[arg(long, value_name = "N")]
    pub source_count: Option<u32>,
    /// Write report.json, report.md and SVG charts to this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Free text naming the setup in the report, e.g. "MetaFi, SQLite, server on core 0".
    #[arg(long, default_value = "")]
    pub label: String,
    /// Worker threads of the tool (default: the CPUs it may run on, e.g. 1 under taskset -c 1).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Most users alive at once in arrival mode; later arrivals are skipped and counted as errors.
    #[arg(long, default_value_t = 1_000_000)]
    pub max_users: u64,
    /// Open-file limit to raise to (one descriptor per connection).
    #[arg(long, default_value_t = 1_048_576)]
    pub nofile: u64,
    /// Period of the progress line when stderr is not a terminal.
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    pub progress_every: Duration,
    /// Process id of the server (on this machine): the report adds its CPU time, the cores it
    /// used and its peak memory, read from /proc. Several (a cluster's nodes): a comma-separated
    /// list or the flag repeated; their CPU time and peak memory are summed.
    #[arg(long = "server-pid", value_name = "PID", value_delimiter = ',')]
    pub server_pids: Vec<u32>,
    /// Exit with status 1 when more than this fraction of attempts failed (e.g. 0.01).
    #[arg(long, value_name = "FRACTION")]
    pub max_error_ratio: Option<f64>,
    /// Exit with status 1 when fewer successes than this were measured.
    #[arg(long, default_value_t = 1)]
    pub min_successes: u64,
}

/// Users created before the measured run (not measured).
#[derive(Debug, Clone, Args)]
pub struct UserArgs {
    /// Accounts created in the setup phase and used in turn.
    #[arg(long, default_value_t = 1000)]
    pub users: u64,
    /// Requests in flight while creating them.
    #[arg(long, default_value_t = 64)]
    pub setup_concurrency: u64,
}

/// Realtime socket options.
#[derive(Debug, Clone, Args)]
pub struct SocketArgs {
    /// Wire format of the realtime socket.
    #[arg(long, value_enum, default_value = "json")]
    pub format: Format,
    /// WebSocket read buffer per socket, bytes (small keeps 100k sockets cheap).
    #[arg(long, default_value_t = 4096)]
    pub socket_read_buffer: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Json,
    Protobuf,
}

impl Common {
    /// The load model the flags describe; `fallback` when none is given.
    pub fn load(&self, fallback: LoadModel) -> LoadModel {
        if let Some(clients) = self.clients {
            LoadModel::Closed {
                clients,
                duration: self.duration,
            }
        } else if !self.phases.is_empty() {
            LoadModel::Arrival(self.phases.clone())
        } else {
            fallback
        }
    }
}

/// `--tick-rate`: 64 or 128 (the two rates competitive shooters run at).
fn parse_tick_rate(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(rate @ (64 | 128)) => Ok(rate),
        _ => Err(format!("{text:?}: the tick rate is 64 or 128")),
    }
}

fn parse_share(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(share) if (0.0..=1.0).contains(&share) => Ok(share),
        _ => Err(format!("{text:?}: a share from 0 to 1")),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn phases_and_clients_choose_the_load_model() {
        let cli = Cli::try_parse_from([
            "metafi-bench",
            "register",
            "--phase",
            "10:2s",
            "--phase",
            "20:1s",
        ])
        .expect("parses");
        let Command::Register { common } = cli.command else {
            panic!("register")
        };
        let fallback = LoadModel::Closed {
            clients: 1,
            duration: Duration::from_secs(1),
        };
        assert_eq!(
            common.load(fallback.clone()),
            LoadModel::Arrival(vec![
                Phase {
                    rate: 10.0,
                    duration: Duration::from_secs(2)
                },
                Phase {
                    rate: 20.0,
                    duration: Duration::from_secs(1)
                },
            ])
        );
        let cli =
            Cli::try_parse_from(["metafi-bench", "auth", "--clients", "8", "--duration", "3s"])
                .expect("parses");
        let Command::Auth { common, .. } = cli.command else {
            panic!("auth")
        };
        assert_eq!(
            common.load(fallback),
            LoadModel::Closed {
                clients: 8,
                duration: Duration::from_secs(3)
            }
        );
        assert!(
            Cli::try_parse_from(["metafi-bench", "auth", "--clients", "8", "--phase", "1:1s"])
                .is_err()
        );
    }

    #[test]
    fn servers_and_pids_are_lists_or_repeated_flags() {
        let cli = Cli::try_parse_from([
            "metafi-bench",
            "register",
            "--server",
            "http://127.0.0.1:1,http://127.0.0.1:2",
            "--server",
            "http://127.0.0.1:3",
            "--server-pid",
            "10,11",
        ])
        .expect("parses");
        let Command::Register { common } = cli.command else {
            panic!("register")
        };
        assert_eq!(
            common.servers,
            [
                "http://127.0.0.1:1",
                "http://127.0.0.1:2",
                "http://127.0.0.1:3"
            ]
        );
        assert_eq!(common.server_pids, [10, 11]);
        let cli = Cli::try_parse_from(["metafi-bench", "register"]).expect("parses");
        let Command::Register { common } = cli.command else {
            panic!("register")
        };
        assert_eq!(common.servers, ["http://127.0.0.1:7350"]);
        assert!(common.server_pids.is_empty());
    }

    #[test]
    fn esl_takes_a_tick_rate_of_64_or_128_and_its_limits() {
        let cli = Cli::try_parse_from([
            "metafi-bench",
            "esl",
            "--tick-rate",
            "128",
            "--max-matches",
            "3",
            "--expensive",
            "1",
            "--step",
            "2s",
        ])
        .expect("parses");
        let Command::Esl {
            tick_rate,
            max_matches,
            expensive,
            step,
            state_size,
            input_min,
            input_max,
            ..
        } = cli.command
        else {
            panic!("esl")
        };
        assert_eq!(
            (tick_rate, max_matches, expensive, step),
            (128, 3, 1, Duration::from_secs(2))
        );
        assert_eq!((state_size, input_min, input_max), (2000, 40, 200));
        assert!(Cli::try_parse_from(["metafi-bench", "esl", "--tick-rate", "60"]).is_err());
        let Command::Esl { mix, .. } =
            Cli::try_parse_from(["metafi-bench", "esl", "--mix", "0.25"])
                .expect("parses")
                .command
        else {
            panic!("esl")
        };
        assert_eq!(mix, 0.25);
        for bad in ["1.5", "-0.1", "NaN", "x"] {
            assert!(
                Cli::try_parse_from(["metafi-bench", "esl", "--mix", bad]).is_err(),
                "{bad}"
            );
        }
    }
}

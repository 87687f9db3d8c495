//! From parsed flags to a printed report: runtime, limits, client, workload, runner, outputs,
//! and the exit status checks (`--max-error-ratio`, `--min-successes`).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use metafi_client::net::NetCounters;
use metafi_client::{Client, ClientConfig, SocketConfig};

use crate::cli::{Cli, Command, Common, Format, SocketArgs};
use crate::floor;
use crate::net;
use crate::phases::{LoadModel, Phase};
use crate::report::{self, Meta, Report};
use crate::runner::{self, RunOptions};
use crate::servers::Servers;
use crate::workloads::Workload;
use crate::workloads::auth::Auth;
use crate::workloads::ccu::Ccu;
use crate::workloads::esl::EslOptions;
use crate::workloads::leaderboard::{Leaderboard, LeaderboardOptions};
use crate::workloads::register::Register;
use crate::workloads::relay::{Relay, RelayOptions};
use crate::workloads::rpc::{Rpc, RpcOptions};
use crate::workloads::seed_match::{MatchOptions, Matches, Placement};
use crate::workloads::world::{WorldOptions, Worlds};

/// Runs the command on a runtime of `--threads` workers (default: the CPUs the process may
/// use, so `taskset -c 1` gives one: then a current-thread runtime).
pub fn main(cli: Cli) -> anyhow::Result<ExitCode> {
    if let Command::WorldCharts {
        out,
        label,
        reports,
    } = &cli.command
    {
        return world_charts(out, label, reports);
    }
    if let Command::Floor { listen } = &cli.command {
        return floor::run(*listen).map(|()| ExitCode::SUCCESS);
    }
    let common = common(&cli.command)?.clone();
    let threads = common
        .threads
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
        .max(1);
    // One thread: a current-thread runtime runs every task on this thread, with no wake-ups
    // handed between the main thread and a worker and no work-stealing bookkeeping (it cuts
    // the tool's CPU per message of the match workload, docs/BENCH.md "Cost per message").
    let runtime = if threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("metafi-bench")
            .enable_all()
            .build()
    }
    .context("starting the async runtime")?;
    if let Command::Esl { .. } = &cli.command {
        return runtime.block_on(esl(cli.command));
    }
    runtime.block_on(async move {
        let report = execute(cli.command, ctrl_c()).await?;
        finish(&report, &common)
    })
}

/// Runs one workload and returns its report; `interrupt` ends the run early (Ctrl-C).
pub async fn execute(
    command: Command,
    interrupt: impl std::future::Future<Output = ()> + Send,
) -> anyhow::Result<Report> {
    let common = common(&command)?.clone();
    let limit = net::raise_open_files(common.nofile).context("raising the open-file limit")?;
    let mut notes = Vec::new();
    if limit < common.nofile {
        // Only a problem for runs that open more connections than that; it is in the report so
        // a "connect too many open files" error can be read against it.
        tracing::info!(
            limit,
            wanted = common.nofile,
            "open-file limit is lower than asked"
        );
        notes.push(format!(
            "open-file limit {limit} (asked {}): at most that many connections (docs/BENCH.md)",
            common.nofile
        ));
    }
    let sources = match (&common.sources, common.source_count) {
        (Some(list), _) => net::parse_sources(list).map_err(anyhow::Error::msg)?,
        (None, Some(n)) => net::loopback_sources(n),
        (None, None) => Vec::new(),
    };
    // One client per server, all counting into one set of network counters.
    let counters = Arc::new(NetCounters::default());
    let mut clients = Vec::with_capacity(common.servers.len());
    for server in &common.servers {
        let config = ClientConfig {
            server: server.clone(),
            server_key: common.server_key.clone(),
            timeout: common.timeout,
            sources: sources.clone(),
            max_idle: 4,
        };
        clients.push(
            Client::new(&config, counters.clone())
                .await
                .with_context(|| format!("preparing the client of {server}"))?,
        );
    }
    let client = Servers::new(common.servers.clone(), clients)?;
    let closed = |clients| LoadModel::Closed {
        clients,
        duration: common.duration,
    };
    let ramp = |rate, secs| {
        LoadModel::Arrival(vec![Phase {
            rate,
            duration: Duration::from_secs(secs),
        }])
    };
    match command {
        Command::Register { .. } => {
            drive(
                Arc::new(Register::default()),
                client,
                &common,
                closed(64),
                notes,
                interrupt,
            )
            .await
        }
        Command::Auth { users, .. } => {
            let workload = Auth::new(users.users, users.setup_concurrency);
            drive(
                Arc::new(workload),
                client,
                &common,
                closed(64),
                notes,
                interrupt,
            )
            .await
        }
        Command::Rpc {
            users,
            id,
            payload,
            no_verify_echo,
            calls,
            socket,
            socket_args,
            ..
        } => {
            let workload = Rpc::new(RpcOptions {
                id,
                payload,
                verify_echo: !no_verify_echo,
                users: users.users,
                setup_concurrency: users.setup_concurrency,
                calls,
                socket: socket.then(|| socket_config(&socket_args, &common)),
            })?;
            drive(
                Arc::new(workload),
                client,
                &common,
                closed(64),
                notes,
                interrupt,
            )
            .await
        }
        Command::Leaderboard {
            users,
            board,
            seed,
            seed_rpc,
            around_every,
            around_limit,
            ..
        } => {
            let workload = Leaderboard::new(LeaderboardOptions {
                board,
                seed,
                seed_rpc,
                users: users.users,
                setup_concurrency: users.setup_concurrency,
                around_every,
                around_limit,
            });
            drive(
                Arc::new(workload),
                client,
                &common,
                closed(64),
                notes,
                interrupt,
            )
            .await
        }
        Command::Ccu { socket, hold, .. } => {
            let workload = Ccu::new(hold, socket_config(&socket, &common));
            drive(
                Arc::new(workload),
                client,
                &common,
                ramp(100.0, 10),
                notes,
                interrupt,
            )
            .await
        }
        Command::Esl { .. } => {
            anyhow::bail!("the esl workload runs steps of its own (metafi-bench esl)")
        }
        Command::WorldCharts { .. } => anyhow::bail!("world-charts runs no workload"),
        Command::Floor { .. } => anyhow::bail!("floor runs no workload: it is a server"),
        Command::Match {
            users,
            socket,
            rpc,
            hold,
            interval,
            echo_opcode,
            broadcast_opcode,
            echo_size,
            broadcast_size,
            cross_node,
            create_rpc,
            match_size,
            ..
        } => {
            let workload = Matches::new(MatchOptions {
                rpc,
                hold,
                interval,
                echo_opcode,
                broadcast_opcode,
                echo_size,
                broadcast_size,
                users: users.users,
                setup_concurrency: users.setup_concurrency,
                socket: socket_config(&socket, &common),
                placement: cross_node.map(|cross_node| Placement {
                    cross_node,
                    create_rpc,
                    match_size,
                }),
            })?;
            drive(
                Arc::new(workload),
                client,
                &common,
                ramp(10.0, 10),
                notes,
                interrupt,
            )
            .await
        }
        Command::World {
            users,
            socket,
            world,
            map,
            seed,
            behaviour,
            command_interval,
            hold,
            server_metrics,
            ..
        } => {
            let behaviour = metafi_world::bots::Behaviour::parse(&behaviour).ok_or_else(|| {
                anyhow::anyhow!(
                    "--behaviour {behaviour:?}: one of roam, hunt, camp, converge, mixed"
                )
            })?;
            let workload = Worlds::new(WorldOptions {
                world,
                map,
                seed,
                behaviour,
                command_interval,
                hold,
                users: users.users,
                setup_concurrency: users.setup_concurrency,
                socket: socket_config(&socket, &common),
                metrics: server_metrics,
                server_pids: common.server_pids.clone(),
            });
            drive(
                Arc::new(workload),
                client,
                &common,
                ramp(50.0, 10),
                notes,
                interrupt,
            )
            .await
        }
        Command::Relay {
            socket,
            hold,
            interval,
            size,
            join_delay,
            ..
        } => {
            let workload = Relay::new(RelayOptions {
                hold,
                interval,
                size,
                join_delay,
                socket: socket_config(&socket, &common),
            })?;
            drive(
                Arc::new(workload),
                client,
                &common,
                ramp(10.0, 10),
                notes,
                interrupt,
            )
            .await
        }
    }
}

fn socket_config(args: &SocketArgs, common: &Common) -> SocketConfig {
    SocketConfig {
        format: match args.format {
            Format::Json => metafi_client::Format::Json,
            Format::Protobuf => metafi_client::Format::Protobuf,
        },
        timeout: common.timeout,
        read_buffer: args.socket_read_buffer,
        ..SocketConfig::default()
    }
}

async fn drive<W: Workload>(
    workload: Arc<W>,
    client: Servers,
    common: &Common,
    fallback: LoadModel,
    mut notes: Vec<String>,
    interrupt: impl std::future::Future<Output = ()> + Send,
) -> anyhow::Result<Report> {
    let load = common.load(fallback);
    let started_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let name = workload.name();
    let outcome = runner::run(
        workload.clone(),
        client,
        RunOptions {
            load: load.clone(),
            max_users: common.max_users,
            progress_every: common.progress_every,
            server_pids: common.server_pids.clone(),
        },
        interrupt,
    )
    .await?;
    Ok(Report::build(
        Meta {
            workload: name.to_owned(),
            label: common.label.clone(),
            server: common.servers.join(","),
            load: load.describe(),
            command: command_line(),
            started_unix,
            planned_secs: load.total().as_secs_f64(),
            duration_secs: outcome.duration.as_secs_f64(),
            interrupted: outcome.interrupted,
            notes: {
                notes.extend(outcome.notes);
                notes.extend(workload.after(outcome.duration));
                notes
            },
            server_usage: outcome.server,
            figures: workload.figures(),
        },
        &outcome.snapshot,
    ))
}

/// Prints the table, writes the files, and turns the thresholds into the exit status.
#[allow(clippy::print_stdout, clippy::print_stderr)] // the tool's user-facing output
fn finish(report: &Report, common: &Common) -> anyhow::Result<ExitCode> {
    print!("{}", report::table(report));
    if let Some(dir) = &common.out {
        let files = report.write_files(dir)?;
        eprintln!("wrote {} files to {}", files.len(), dir.display());
    }
    let successes = report.success_total();
    let errors = report.error_total();
    let mut ok = true;
    if successes < common.min_successes {
        eprintln!(
            "FAILED: {successes} successes, fewer than --min-successes {}",
            common.min_successes
        );
        ok = false;
    }
    if let Some(max) = common.max_error_ratio {
        let attempts = successes + errors;
        let ratio = if attempts == 0 {
            0.0
        } else {
            errors as f64 / attempts as f64
        };
        if ratio > max {
            eprintln!("FAILED: error ratio {ratio:.4} is above --max-error-ratio {max}");
            ok = false;
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `metafi-bench world-charts`: the sweep's charts into `out`.
#[allow(clippy::print_stderr)] // the tool's user-facing output
fn world_charts(
    out: &std::path::Path,
    label: &str,
    reports: &[std::path::PathBuf],
) -> anyhow::Result<ExitCode> {
    let mut runs = Vec::new();
    for path in reports {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let value: serde_json::Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        match report::world_run(&value) {
            Some(run) => runs.push(run),
            None => eprintln!(
                "{}: no measured-phase figures (a world run with this version of the tool?); left out",
                path.display()
            ),
        }
    }
    anyhow::ensure!(!runs.is_empty(), "no report has measured-phase figures");
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    for (name, svg) in report::world_sweep_charts(&runs, label) {
        let path = out.join(name);
        std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn common(command: &Command) -> anyhow::Result<&Common> {
    Ok(match command {
        Command::Ccu { common, .. }
        | Command::Register { common }
        | Command::Auth { common, .. }
        | Command::Rpc { common, .. }
        | Command::Leaderboard { common, .. }
        | Command::Match { common, .. }
        | Command::World { common, .. }
        | Command::Relay { common, .. }
        | Command::Esl { common, .. } => common,
        Command::WorldCharts { .. } => anyhow::bail!("world-charts runs no workload"),
        Command::Floor { .. } => anyhow::bail!("floor runs no workload: it is a server"),
    })
}

/// The command as typed, quoted for a shell, for the report.
fn command_line() -> String {
    std::env::args()
        .enumerate()
        .map(|(i, arg)| {
            let arg = if i == 0 {
                std::path::Path::new(&arg)
                    .file_name()
                    .map_or(arg.clone(), |n| n.to_string_lossy().into_owned())
            } else {
                arg
            };
            if !arg.is_empty()
                && arg
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c))
            {
                arg
            } else {
                format!("'{}'", arg.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `metafi-bench esl`: the consolidation steps, their table on stdout, and `esl.json` with
/// the SVG charts (`esl-latency.svg`, `esl-cpu.svg`) in `--out`; fails when no step was measured or the run stopped on an error rather than the
/// node's refusal or `--max-matches`.
#[allow(clippy::print_stderr)] // the tool's user-facing output
async fn esl(command: Command) -> anyhow::Result<ExitCode> {
    let Command::Esl {
        common,
        socket,
        rpc,
        tick_rate,
        max_matches,
        matches_per_step,
        step,
        warmup,
        expensive,
        mix,
        state_size,
        input_min,
        input_max,
        work,
    } = command
    else {
        anyhow::bail!("not the esl command");
    };
    net::raise_open_files(common.nofile).context("raising the open-file limit")?;
    let server = common
        .servers
        .first()
        .context("--server is required")?
        .clone();
    let config = ClientConfig {
        server: server.clone(),
        server_key: common.server_key.clone(),
        timeout: common.timeout,
        sources: Vec::new(),
        max_idle: 4,
    };
    let client = Client::new(&config, Arc::new(NetCounters::default()))
        .await
        .with_context(|| format!("preparing the client of {server}"))?;
    let options = EslOptions {
        rpc,
        tick_rate,
        max_matches,
        matches_per_step: matches_per_step.max(1),
        step,
        warmup,
        expensive,
        mix,
        state_size,
        input_min: input_min.min(input_max),
        input_max,
        work,
        server_pids: common.server_pids.clone(),
        socket: socket_config(&socket, &common),
    };
    let report = crate::workloads::esl::run(client, options, ctrl_c()).await?;
    if let Some(dir) = &common.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join("esl.json");
        std::fs::write(&path, serde_json::to_vec_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("wrote {}", path.display());
        for (name, svg) in crate::workloads::esl::charts(&report) {
            let path = dir.join(name);
            std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
    }
    let errors: u64 = report.steps.iter().map(|s| s.errors).sum();
    let measured = report.steps.iter().any(|s| s.inputs > 0);
    let stopped_well = report.stopped.contains("Node is full")
        || report.stopped.contains("--max-matches")
        || report.stopped == "interrupted";
    if !measured || !stopped_well || errors > 0 {
        eprintln!(
            "FAILED: {} steps measured, {errors} errors, stopped: {}",
            report.steps.len(),
            report.stopped
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Resolves on Ctrl-C (never, if the signal cannot be listened to).
async fn ctrl_c() {
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}

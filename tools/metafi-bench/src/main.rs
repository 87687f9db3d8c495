//! The `metafi-bench` command line: parses flags, builds a runtime sized to the CPUs the tool
//! may use, runs one workload and prints its report.

use std::process::ExitCode;

use clap::Parser as _;
use metafi_bench::app;
use metafi_bench::cli::Cli;

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("METAFI_BENCH_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    match app::main(cli) {
        Ok(code) => code,
        Err(e) => {
            #[allow(clippy::print_stderr)] // user-facing error output of the binary
            {
                eprintln!("metafi-bench: {e:#}");
            }
            ExitCode::FAILURE
        }
    }
}

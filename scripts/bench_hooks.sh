#!/usr/bin/env bash
# What hooks cost (docs/BENCHMARKS.md, "Hooks"): device authentication of 1,000 existing users
# with no hook, then with a pass-through before+after hook pair on AuthenticateDevice in Lua,
# JavaScript and native Rust; and the hook-free RPC echo in Lua, JavaScript and native Rust
# over REST and the socket (what a call pays for hooks existing). Server on core 0,
# metafi-bench on core 1, a fresh server and data directory per run. Prints the median server
# CPU per call of every row.
#
#   [BASE_BIN=/path/to/old/metafi] scripts/bench_hooks.sh [auth] [rpc]   (default: both)
#
# With BASE_BIN, every row runs on both servers, alternating run by run (base, this, base, …),
# so a before/after comparison is measured in one session on the same machine state.
#
# Environment: BIN / BENCH (the binaries, default target/release/…), RUNS (default 3),
# DURATION (seconds per run, default 10), CLIENTS (default 64), OUT (report directory, default
# a temporary one), PORT / METRICS_PORT (default 7490 / 9190).
# Needs release builds:
#   cargo build --release -p metafi-server --bin metafi --features examples &&
#     cargo build --release -p metafi-bench
# The hook pairs do nothing but pass the request on (the before hook returns it, the after hook
# returns nothing), so the difference to the no-hook row is the cost of the hook calls
# themselves: handing the request and answer to the engine, the VM call, reading the result
# back.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

runs=${RUNS:-3}
duration=${DURATION:-10}
clients=${CLIENTS:-64}
port=${PORT:-7490}
metrics_port=${METRICS_PORT:-9190}
out=${OUT:-$(mktemp -d -t metafi-bench-hooks.XXXXXX)}
mkdir -p "$out"
this_bin=${BIN:-target/release/metafi}
base_bin=${BASE_BIN:-}
bench=${BENCH:-target/release/metafi-bench}
for b in "$this_bin" "$bench" ${base_bin:+"$base_bin"}; do
  [ -x "$b" ] || { echo "bench_hooks: $b is missing: build it first (see the header)" >&2; exit 1; }
done
builds=this
[ -z "$base_bin" ] || builds="base this"

name=bench_hooks
bin=$this_bin
# shellcheck source=scripts/bench_server.sh
source scripts/bench_server.sh
trap stop_server EXIT

modules=$out/modules
write_hook_modules "$modules"

# use BUILD: the server binary of BUILD (base or this) for the next start_server.
use() {
  if [ "$1" = base ]; then bin=$base_bin; else bin=$this_bin; fi
}

auth_rows() {
  for r in $(seq 1 "$runs"); do
    for hooks in none lua js native; do
      for build in $builds; do
        use "$build"
        local env='[]'
        [ "$hooks" = native ] && env='["native_hooks=on"]'
        start_server "$out/server.log" --set "runtime.path=$modules/$hooks" --set "runtime.env=$env"
        run "auth-$hooks-$build-$r" auth --users 1000
        stop_server
      done
    done
  done
}

rpc_rows() {
  for r in $(seq 1 "$runs"); do
    for build in $builds; do
      use "$build"
      start_server "$out/server.log"
      for id in echo echo_js echo_native; do
        run "rpc-$id-rest-$build-$r" rpc --id "$id" --users "$clients"
        run "rpc-$id-socket-$build-$r" rpc --id "$id" --socket --users "$clients"
      done
      stop_server
    done
  done
}

echo "bench_hooks: $runs run(s) of ${duration}s, $clients clients, builds: $builds; reports in $out"
uptime
for part in "${@:-auth rpc}"; do
  for p in $part; do
    case "$p" in
      auth) auth_rows ;;
      rpc) rpc_rows ;;
      *) echo "bench_hooks: unknown part $p (auth, rpc)" >&2; exit 2 ;;
    esac
  done
done
uptime
echo
# Names are NAME-BUILD-RUN; the median is over a row's runs (by mean rate), with their spread.
python3 scripts/lib/median_of_runs.py "$out/summary.txt" 2

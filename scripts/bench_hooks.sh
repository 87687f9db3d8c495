#!/usr/bin/env bash
# What hooks cost (docs/BENCHMARKS.md, "Hooks"): device authentication of existing users with
# no hook, then with a before+after hook pair on AuthenticateDevice in Lua, JavaScript and
# native Rust; and the hook-free RPC echo (`echo_native`, REST and socket) of a server built
# before hooks existed (BASE_BIN) and of this tree. Server on core 0, metafi-bench on core 1, a
# fresh server and data directory per run.
#
#   scripts/bench_hooks.sh [auth] [rpc]        (default: both)
#
# Environment: BIN / BENCH (the binaries, default target/release/…), RUNS (default 3),
# DURATION (seconds per run, default 10), CLIENTS (default 64),
# BASE_BIN (the metafi binary of the commit before hooks, for the rpc rows; skipped if unset),
# OUT (report directory, default a temporary one), PORT / METRICS_PORT (default 7490 / 9190).
# Needs release builds:
#   cargo build --release -p metafi-server --bin metafi --features examples &&
#     cargo build --release -p metafi-bench
# The hook pairs do nothing but pass the request on (the before hook returns it, the after hook
# returns nothing), so the difference to the no-hook row is the cost of the hook calls
# themselves: building the request and answer as JSON, the VM call, reading the result back.
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
bin=${BIN:-target/release/metafi}
bench=${BENCH:-target/release/metafi-bench}
for b in "$bin" "$bench"; do
  [ -x "$b" ] || { echo "bench_hooks: $b is missing: build it first (see the header)" >&2; exit 1; }
done
this_bin=$bin

name=bench_hooks
# shellcheck source=scripts/bench_server.sh
source scripts/bench_server.sh
trap stop_server EXIT

modules=$out/modules
write_hook_modules "$modules"

auth_rows() {
  for r in $(seq 1 "$runs"); do
    for hooks in none lua js native; do
      local env='[]'
      [ "$hooks" = native ] && env='["native_hooks=on"]'
      start_server "$out/server.log" --set "runtime.path=$modules/$hooks" --set "runtime.env=$env"
      run "auth-$hooks-$r" auth --users 1000
      stop_server
    done
  done
}

rpc_rows() {
  if [ -z "${BASE_BIN:-}" ]; then
    echo "bench_hooks: BASE_BIN is not set; skipping the rpc rows" >&2
    return
  fi
  for r in $(seq 1 "$runs"); do
    for build in base this; do
      if [ "$build" = base ]; then bin=$BASE_BIN; else bin=$this_bin; fi
      start_server "$out/server.log"
      run "rpc-$build-rest-$r" rpc --id echo_native --users "$clients"
      run "rpc-$build-socket-$r" rpc --id echo_native --socket --users "$clients"
      stop_server
    done
  done
  bin=$this_bin
}

echo "bench_hooks: $runs run(s) of ${duration}s, $clients clients; reports in $out"
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
sed -E 's/-[0-9]+\t.*//' "$out/summary.txt" | sort -u | while read -r row; do
  # Names are NAME-RUN; the median is over a row's runs (by mean rate).
  grep -P "^$row-[0-9]+\t" "$out/summary.txt" | sort -t$'\t' -k2 -g |
    awk -v n="$runs" 'NR == int((n + 1) / 2)' | sed 's/^/median: /'
done

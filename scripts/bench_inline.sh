#!/usr/bin/env bash
# Calls without thread hops (docs/RUNTIME.md, "Calls without thread hops"): the same binary with
# runtime.inline_calls off (every script call hops to a VM thread and back) and on (the call runs
# on the IO worker that received it), alternating in one session. Rows: Lua and JavaScript RPC
# echo over REST and the socket, and device authentication with no hook and with a before+after
# hook pair in Lua and JavaScript (as scripts/bench_hooks.sh). Server on core 0, metafi-bench on
# core 1, a fresh server and data directory per run.
#
#   scripts/bench_inline.sh [rpc] [auth]        (default: both)
#
# Environment: BIN / BENCH (default target/release/…), RUNS (default 3), DURATION (seconds per
# run, default 8), CLIENTS (default 64), OUT (report directory, default a temporary one),
# PORT / METRICS_PORT (default 7492 / 9192), PERF=1 (also record one `perf record -g` profile of
# the Lua REST echo per mode, into OUT/perf-<mode>.data).
# Needs release builds:
#   cargo build --release -p metafi-server --bin metafi --features examples &&
#     cargo build --release -p metafi-bench
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

runs=${RUNS:-3}
duration=${DURATION:-8}
clients=${CLIENTS:-64}
port=${PORT:-7492}
metrics_port=${METRICS_PORT:-9192}
out=${OUT:-$(mktemp -d -t metafi-bench-inline.XXXXXX)}
mkdir -p "$out"
bin=${BIN:-target/release/metafi}
bench=${BENCH:-target/release/metafi-bench}
for b in "$bin" "$bench"; do
  [ -x "$b" ] || { echo "bench_inline: $b is missing: build it first (see the header)" >&2; exit 1; }
done

name=bench_inline
# shellcheck source=scripts/bench_server.sh
source scripts/bench_server.sh
trap stop_server EXIT

modules=$out/modules
write_hook_modules "$modules"

rpc_rows() {
  for r in $(seq 1 "$runs"); do
    for inline in false true; do
      start_server "$out/server.log" --set "runtime.inline_calls=$inline"
      run "rpc-lua-rest-inline=$inline-$r" rpc --id echo --users "$clients"
      run "rpc-lua-socket-inline=$inline-$r" rpc --id echo --socket --users "$clients"
      run "rpc-js-rest-inline=$inline-$r" rpc --id echo_js --users "$clients"
      run "rpc-js-socket-inline=$inline-$r" rpc --id echo_js --socket --users "$clients"
      if [ "${PERF:-0}" = 1 ] && [ "$r" = 1 ]; then
        perf record -e cpu-clock -F 999 -g -p "$server" -o "$out/perf-inline=$inline.data" -- sleep "$duration" \
          >/dev/null 2>&1 &
        local recorder=$!
        run "perf-lua-rest-inline=$inline-$r" rpc --id echo --users "$clients"
        wait "$recorder" || true
      fi
      stop_server
    done
  done
}

auth_rows() {
  for r in $(seq 1 "$runs"); do
    for inline in false true; do
      for hooks in none lua js; do
        start_server "$out/server.log" --set "runtime.path=$modules/$hooks" \
          --set "runtime.inline_calls=$inline"
        run "auth-$hooks-inline=$inline-$r" auth --users 1000
        stop_server
      done
    done
  done
}

echo "bench_inline: $runs run(s) of ${duration}s, $clients clients; reports in $out"
uptime
for part in "${@:-rpc auth}"; do
  for p in $part; do
    case "$p" in
      rpc) rpc_rows ;;
      auth) auth_rows ;;
      *) echo "bench_inline: unknown part $p (rpc, auth)" >&2; exit 2 ;;
    esac
  done
done
uptime
echo
# Names are NAME-RUN; the median is over a row's runs (by server CPU per call), with their spread.
python3 scripts/lib/median_of_runs.py "$out/summary.txt" 6

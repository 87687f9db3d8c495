#!/usr/bin/env bash
# The seed benchmark's request workloads against metafi on ONE server core (docs/BENCHMARKS.md,
# "Registration and authentication" and "RPC echo"): registration, authentication and the echo
# RPC in each runtime over REST and the socket. The server is pinned to core 0, metafi-bench and
# PostgreSQL to core 1; every workload gets a fresh server (and a fresh database).
#
#   scripts/bench_requests.sh [sqlite|postgres|rpc]...      (default: sqlite postgres rpc)
#
# Environment: RUNS (runs per row, default 3), DURATION (seconds per run, default 15), CLIENTS
# (closed-loop clients, default 64), OUT (directory for the reports, default a temporary one),
# PORT / METRICS_PORT (default 7470 / 9170), BIN / BENCH (the binaries, default
# target/release/…). Needs release builds:
#   cargo build --release -p metafi-server --bin metafi --features examples &&
#     cargo build --release -p metafi-bench
# Prints one line per run (mean rate, latency, server cores, rate per server CPU-second) and the
# median run per row; each run's report.json / report.md / SVG charts stay under OUT.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

runs=${RUNS:-3}
duration=${DURATION:-15}
clients=${CLIENTS:-64}
port=${PORT:-7470}
metrics_port=${METRICS_PORT:-9170}
out=${OUT:-$(mktemp -d -t metafi-bench-requests.XXXXXX)}
mkdir -p "$out"
bin=${BIN:-target/release/metafi}
bench=${BENCH:-target/release/metafi-bench}
for b in "$bin" "$bench"; do
  [ -x "$b" ] || { echo "bench_requests: $b is missing: build it first (see the header)" >&2; exit 1; }
done

name=bench_requests
# shellcheck source=scripts/bench_server.sh
source scripts/bench_server.sh
trap stop_server EXIT

# A fresh PostgreSQL database per run, the server's processes on core 1 with the tool.
postgres_url() {
  local db
  db=mfb_$(date +%s%N)
  METAFI_PG_DATABASE=$db scripts/postgres.sh
  for p in $(pgrep -u postgres); do taskset -p -c 1 "$p" >/dev/null; done
}

# run NAME WORKLOAD-ARGS... : one run; prints its summary line and records it for the median.
run() {
  local name=$1
  shift
  local dir=$out/$name
  mkdir -p "$dir"
  taskset -c 1 "$bench" "$@" --server "http://127.0.0.1:$port" --clients "$clients" \
    --duration "${duration}s" --server-pid "$server" --out "$dir" >"$dir/bench.txt" 2>&1 || {
    echo "bench_requests: $name failed; its output:" >&2
    cat "$dir/bench.txt" >&2
    exit 1
  }
  python3 - "$dir/report.json" "$name" <<'EOF' | tee -a "$out/summary.txt"
import json, sys
report = json.load(open(sys.argv[1]))
name = sys.argv[2]
rows = report["requests"]
row = max(rows, key=lambda r: r["count"])
usage = report.get("server_usage") or {}
cores = usage.get("cores_used", float("nan"))
per_cpu = row["count"] / usage["cpu_secs"] if usage.get("cpu_secs") else float("nan")
print(f"{name}\t{row['mean_rate']:.1f}/s\tmean {row['mean_ms']:.2f} ms\tp99 {row['p99_ms']:.2f} ms"
      f"\tserver {cores:.2f} cores\t{per_cpu:.0f} per server CPU-second")
EOF
}

storage_rows() {
  local backend=$1
  for workload in register auth; do
    for r in $(seq 1 "$runs"); do
      if [ "$backend" = postgres ]; then
        start_server "$out/server.log" --database-url "$(postgres_url)"
      else
        start_server "$out/server.log"
      fi
      if [ "$workload" = auth ]; then
        run "$backend-auth-$r" auth --users 1000
      else
        run "$backend-register-$r" register
      fi
      stop_server
    done
  done
}

rpc_rows() {
  for r in $(seq 1 "$runs"); do
    start_server "$out/server.log"
    for id in echo_native echo echo_js; do
      run "rpc-$id-rest-$r" rpc --id "$id" --users "$clients"
      run "rpc-$id-socket-$r" rpc --id "$id" --socket --users "$clients"
    done
    stop_server
  done
}

echo "bench_requests: $runs run(s) of ${duration}s, $clients clients; reports in $out"
uptime
for part in "${@:-sqlite postgres rpc}"; do
  for p in $part; do
    case "$p" in
      sqlite | postgres) storage_rows "$p" ;;
      rpc) rpc_rows ;;
      *) echo "bench_requests: unknown part $p (sqlite, postgres, rpc)" >&2; exit 2 ;;
    esac
  done
done
echo
# Names are NAME-RUN; the median is over a row's runs, with their spread.
python3 scripts/lib/median_of_runs.py "$out/summary.txt" 2

#!/usr/bin/env bash
# The leaderboard benchmark (docs/BENCHMARKS.md, "Leaderboards"): a board filled with SEED
# records through server code (examples/lua/leaderboard.lua, RPC leaderboard_seed), then
# score submissions (`POST /v2/leaderboard/bench`) alone, then submissions each followed by a
# records-around-owner read (`GET /v2/leaderboard/bench/owner/{id}`), by signed-in users; last
# the same mix from one client, for latency without queueing.
# Server on core 0, metafi-bench on core 1, one server for all the runs (the board is filled
# once: filling a million records is the slow part).
#
#   scripts/bench_leaderboard.sh            metafi on SQLite (a fresh data directory)
#   NAKAMA=1 scripts/bench_leaderboard.sh   a real Nakama (scripts/nakama.sh) on PostgreSQL
#
# Environment: BIN / BENCH (default target/release/…), SEED (records before the runs, default
# 1000000), RUNS (default 3), DURATION (seconds per run, default 10), CLIENTS (default 64),
# USERS (submitting users, default 1000), OUT (report directory, default a temporary one),
# PORT / METRICS_PORT (default 7491 / 9191).
# Needs release builds:
#   cargo build --release -p metafi-server --bin metafi --features examples &&
#     cargo build --release -p metafi-bench
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

seed=${SEED:-1000000}
runs=${RUNS:-3}
duration=${DURATION:-10}
clients=${CLIENTS:-64}
users=${USERS:-1000}
port=${PORT:-7491}
metrics_port=${METRICS_PORT:-9191}
out=${OUT:-$(mktemp -d -t metafi-bench-leaderboard.XXXXXX)}
mkdir -p "$out"
bin=${BIN:-target/release/metafi}
bench=${BENCH:-target/release/metafi-bench}
for b in "$bin" "$bench"; do
  [ -x "$b" ] || { echo "bench_leaderboard: $b is missing: build it first (see the header)" >&2; exit 1; }
done

name=bench_leaderboard
if [ -n "${NAKAMA:-}" ]; then
  trap 'scripts/nakama.sh stop' EXIT
  port=$(NAKAMA_TOKEN_EXPIRY_SEC=3600 scripts/nakama.sh start)
  server=$(cat "${NAKAMA_STATE_DIR:-/tmp/metafi-nakama}/pid")
  # Nakama on core 0 (all its threads), as metafi; its PostgreSQL is not pinned.
  taskset -apc 0 "$server" >/dev/null
else
  # shellcheck source=scripts/bench_server.sh
  source scripts/bench_server.sh
  trap stop_server EXIT
  # The seed RPC writes 10,000 records per call: more than the default 5 s call budget allows.
  start_server "$out/server.log" --set runtime.call_timeout_ms=600000
fi

rss_mib() { awk '/VmRSS/ { printf "%.0f", $2 / 1024 }' "/proc/$server/status"; }

# run NAME WORKLOAD-ARGS... : one run; prints its summary lines (one per series).
run() {
  local name=$1
  shift
  local dir=$out/$name
  mkdir -p "$dir"
  taskset -c 1 "$bench" leaderboard "$@" --server "http://127.0.0.1:$port" \
    --clients "${run_clients:-$clients}" --users "$users" --timeout 120s --server-pid "$server" \
    --out "$dir" >"$dir/bench.txt" 2>&1 || {
    echo "bench_leaderboard: $name failed; its output:" >&2
    cat "$dir/bench.txt" >&2
    exit 1
  }
  python3 - "$dir/report.json" "$name" <<'EOF' | tee -a "$out/summary.txt"
import json, sys
report = json.load(open(sys.argv[1]))
name = sys.argv[2]
usage = report.get("server_usage") or {}
total = sum(r["count"] for r in report["requests"])
per_call = 1e6 * usage["cpu_secs"] / total if usage.get("cpu_secs") and total else float("nan")
for row in report["requests"]:
    print(f"{name}\t{row['name']}\t{row['mean_rate']:.1f}/s\tp50 {row['p50_ms']:.2f} ms"
          f"\tp99 {row['p99_ms']:.2f} ms\tserver {usage.get('cores_used', float('nan')):.2f} cores"
          f"\t{per_call:.1f} us server CPU per request")
EOF
}

echo "bench_leaderboard: seed $seed, $runs run(s) of ${duration}s, $clients clients; reports in $out"
uptime
echo "server memory before the seed: $(rss_mib) MiB" | tee -a "$out/summary.txt"
# The fill: one short run whose setup adds the records (reported as a setup note).
run fill --seed "$seed" --duration 1s --around-every 1
grep -h "setup (not measured): added" "$out/fill/bench.txt" | tee -a "$out/summary.txt" || true
echo "server memory after the seed: $(rss_mib) MiB" | tee -a "$out/summary.txt"
for r in $(seq 1 "$runs"); do
  # Writes alone (one around-owner read per million writes: none in 10 s), then the mix.
  run "write-$r" --duration "${duration}s" --around-every 1000000
  run "mixed-$r" --duration "${duration}s" --around-every 1
done
# Latency without queueing: one client, a write then a read around its owner, in turn.
for r in $(seq 1 "$runs"); do
  run_clients=1 run "one-client-$r" --duration "${duration}s" --around-every 1
done
echo "server memory after the runs: $(rss_mib) MiB" | tee -a "$out/summary.txt"
uptime

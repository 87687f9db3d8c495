#!/usr/bin/env bash
# The ESL consolidation benchmark (docs/BENCHMARKS.md, "ESL consolidation"; issue 20): metafi on
# ONE core (taskset core 0, one match executor thread), metafi-bench on core 1 adding 12-player
# matches step by step until the node refuses ("Node is full") or MAX_MATCHES.
#
#   scripts/bench_esl.sh [extra `metafi serve` flags...]
#
# Environment: TICK_RATE (64 or 128, default 64), PLACEMENT (match.placement: cost or count,
# default cost; it chooses between executor threads, so it only matters with THREADS > 1),
# THREADS (match.executor_threads, default 1: the objective counts each thread as one core), EXPENSIVE (matches burning 10x CPU per tick, default 0), MAX_MATCHES (default
# 40), STEP (measured seconds per step, default 10), WORK (rounds of simulated game logic per
# tick, default 20000), OUT (directory for esl.json, bench.txt and the server log, default a
# temporary one), PORT / METRICS_PORT, SERVER_BIN / BENCH_BIN (default the release builds).
# Prints the tool's table (one row per step) and the last
# step the node accepted. Needs release builds:
#   cargo build --release -p metafi-server --bin metafi --features examples &&
#     cargo build --release -p metafi-bench
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

tick_rate=${TICK_RATE:-64}
placement=${PLACEMENT:-cost}
expensive=${EXPENSIVE:-0}
max_matches=${MAX_MATCHES:-40}
step=${STEP:-10}
work=${WORK:-20000}
out=${OUT:-$(mktemp -d -t metafi-bench-esl.XXXXXX)}
mkdir -p "$out"
target=${CARGO_TARGET_DIR:-target}
bin=${SERVER_BIN:-$target/release/metafi}
bench=${BENCH_BIN:-$target/release/metafi-bench}
port=${PORT:-7470}
metrics_port=${METRICS_PORT:-9170}
name=bench_esl
# shellcheck source=scripts/bench_server.sh
source scripts/bench_server.sh
trap stop_server EXIT
start_server "$out/server.log" --set "match.executor_threads=${THREADS:-1}" \
  --set "match.placement=$placement" "$@"

taskset -c 1 "$bench" esl --server "http://127.0.0.1:$port" --server-pid "$server" \
  --tick-rate "$tick_rate" --expensive "$expensive" --max-matches "$max_matches" \
  --step "${step}s" --work "$work" --out "$out" | tee "$out/bench.txt" || true

python3 - "$out/esl.json" "$tick_rate" "$placement" "$expensive" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
print(f"tick rate {sys.argv[2]}, placement {sys.argv[3]}, expensive {sys.argv[4]}: stopped: {report['stopped']}")
steps = report["steps"]
if steps:
    last = steps[-1]
    print(f"last step accepted: {last['matches']} matches, {last['players']} players, "
          f"server {last['server_cores']:.2f} cores, {last['players_per_core']:.1f} players per core used, "
          f"input->update p50 {last['latency_p50_ms']} ms p99 {last['latency_p99_ms']} ms, "
          f"node cpu {last['load'].get('cpu')} of {last['load'].get('cpu_objective')}")
PY
echo "reports in $out"

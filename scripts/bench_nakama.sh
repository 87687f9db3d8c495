#!/usr/bin/env bash
# MetaFi against a real Nakama in one session (docs/BENCHMARKS.md, "MetaFi and Nakama side by
# side"; issue 21): the same metafi-bench workloads against each server, alternating server by
# server within every run, and a table with both, the ratio of their rates and of their server
# CPU per request. Rows: device registration, device authentication (1,000 users), and the
# echo RPC in each runtime (Go/native, Lua, JavaScript) over REST and the socket, and for the
# RPC rows the floor: `metafi-bench floor`, the same network stack with no server logic.
#
#   scripts/bench_nakama.sh [register] [auth] [rpc]          (default: all three)
#
# Nakama is built from source by scripts/nakama.sh when its source is on the machine (a bare
# clone of heroiclabs/nakama under /work/.mirror, or NAKAMA_SRC); it loads the repository's
# examples (the same `echo`, `echo_js` and a Go plugin `echo_native`). Without it, only the
# MetaFi rows run and the table says so. Both servers use PostgreSQL (Nakama needs it; MetaFi
# gets a fresh database of the same server per run) with the server and PostgreSQL on core 0
# and metafi-bench on core 1. Server CPU is the server process's (not PostgreSQL's).
#
# Environment: RUNS (default 3), DURATION (seconds per run, default 10), CLIENTS (default 64),
# OUT (report directory), BIN / BENCH (default target/release/…). Needs release builds:
#   cargo build --release -p metafi-server --bin metafi --features examples &&
#     cargo build --release -p metafi-bench
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

runs=${RUNS:-3}
duration=${DURATION:-10}
clients=${CLIENTS:-64}
out=${OUT:-$(mktemp -d -t metafi-bench-nakama.XXXXXX)}
mkdir -p "$out"
bin=${BIN:-target/release/metafi}
bench=${BENCH:-target/release/metafi-bench}
port=${PORT:-7490}
metrics_port=${METRICS_PORT:-9190}
for b in "$bin" "$bench"; do
  [ -x "$b" ] || { echo "bench_nakama: $b is missing: build it first (see the header)" >&2; exit 1; }
done
name=bench_nakama
# shellcheck source=scripts/bench_server.sh
source scripts/bench_server.sh

nakama_pid=""
stop_all() {
  stop_server
  if [ -n "$floor_pid" ]; then
    stop_target floor
  fi
  if [ -n "$nakama_pid" ]; then
    scripts/nakama.sh stop >/dev/null 2>&1 || true
    nakama_pid=""
  fi
}
trap stop_all EXIT

have_nakama=""
if scripts/nakama.sh build >/dev/null 2>"$out/nakama-build.log"; then
  have_nakama=1
else
  echo "bench_nakama: no Nakama source or build here ($out/nakama-build.log): MetaFi rows only" >&2
fi

# PostgreSQL's processes on core 0, with the server.
pin_postgres() {
  for p in $(pgrep -u postgres); do taskset -p -c 0 "$p" >/dev/null; done
}

start_metafi() {
  local db
  db=$(METAFI_PG_DATABASE="mfn_$(date +%s%N)" scripts/postgres.sh)
  pin_postgres
  start_server "$out/metafi.log" --database-url "$db"
  target_port=$port
  target_pid=$server
}

start_nakama() {
  target_port=$(NAKAMA_TOKEN_EXPIRY_SEC=3600 NAKAMA_PORT=$((port + 40)) \
    NAKAMA_CONSOLE_PORT=$((port + 41)) scripts/nakama.sh start 2>>"$out/nakama.log")
  nakama_pid=$(cat "${NAKAMA_STATE_DIR:-/tmp/metafi-nakama}/pid")
  taskset -apc 0 "$nakama_pid" >/dev/null
  pin_postgres
  target_pid=$nakama_pid
}

# The floor of the RPC rows (docs/BENCHMARKS.md, "The floor of the RPC rows"): metafi-bench's
# floor server, MetaFi's network stack with no server logic, on core 0 like the servers.
floor_pid=""
start_floor() {
  target_port=$((port + 60))
  taskset -c 0 "$bench" floor --listen "127.0.0.1:$target_port" >"$out/floor.log" 2>&1 &
  floor_pid=$!
  for _ in $(seq 1 100); do
    curl -s -o /dev/null "http://127.0.0.1:$target_port/ws" && break
    sleep 0.1
  done
  target_pid=$floor_pid
}

stop_target() {
  case "$1" in
    metafi) stop_server ;;
    nakama) scripts/nakama.sh stop >/dev/null 2>&1 || true; nakama_pid="" ;;
    floor) kill "$floor_pid" 2>/dev/null || true; wait "$floor_pid" 2>/dev/null || true; floor_pid="" ;;
  esac
}

# measure NAME WORKLOAD-ARGS...: one metafi-bench run against the started target.
measure() {
  local run_name=$1
  shift
  local dir=$out/$run_name
  mkdir -p "$dir"
  taskset -c 1 "$bench" "$@" --server "http://127.0.0.1:$target_port" --clients "$clients" \
    --duration "${duration}s" --server-pid "$target_pid" --out "$dir" >"$dir/bench.txt" 2>&1 || {
    echo "bench_nakama: $run_name failed; its output:" >&2
    cat "$dir/bench.txt" >&2
    exit 1
  }
  python3 - "$dir/report.json" "$run_name" <<'EOF' >>"$out/summary.tsv"
import json, sys
report = json.load(open(sys.argv[1]))
row = max(report["requests"], key=lambda r: r["count"])
usage = report.get("server_usage") or {}
cpu = usage.get("cpu_secs") or float("nan")
print(f"{sys.argv[2]}\t{row['mean_rate']:.1f}\t{row['p99_ms']:.2f}\t{1e6 * cpu / max(row['count'], 1):.2f}")
EOF
  tail -n 1 "$out/summary.tsv"
}

parts=${*:-register auth rpc}
# The floor answers only the RPC rows; FLOOR=0 leaves it out.
floor=""
if [ "${FLOOR:-1}" = 1 ] && [[ " $parts " == *" rpc "* ]]; then floor=1; fi
servers="metafi${have_nakama:+ nakama}${floor:+ floor}"
echo "bench_nakama: $runs run(s) of ${duration}s, $clients clients; servers: $servers; reports in $out"
uptime
for r in $(seq 1 "$runs"); do
  for target in $servers; do
    for part in $parts; do
      if [ "$target" = floor ] && [ "$part" != rpc ]; then continue; fi
      "start_$target"
      case "$part" in
        register) measure "$target:register:$r" register ;;
        auth) measure "$target:auth:$r" auth --users 1000 ;;
        rpc)
          for id in echo_native echo echo_js; do
            measure "$target:$id REST:$r" rpc --id "$id" --users "$clients"
            measure "$target:$id socket:$r" rpc --id "$id" --socket --users "$clients"
          done
          ;;
        *) echo "bench_nakama: unknown part $part (register, auth, rpc)" >&2; exit 2 ;;
      esac
      stop_target "$target"
    done
  done
done

# The table: medians of each row's runs, and the ratios.
python3 - "$out/summary.tsv" <<'EOF' | tee "$out/table.md"
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    name, rate, p99, cpu = line.rstrip("\n").split("\t")
    target, row, _ = name.split(":")
    rows.setdefault(row, {}).setdefault(target, []).append((float(rate), float(p99), float(cpu)))
def med(v, i):
    return statistics.median(x[i] for x in v)
# The floor's columns: its server CPU per call, and MetaFi's and Nakama's as multiples of it
# (the floor row of an RPC is the same whatever the runtime: it runs no script).
print("| workload | MetaFi rate / p99 / server CPU per request (range of runs) | Nakama rate / p99 / server CPU per request (range of runs) | rate ratio | CPU ratio | floor CPU per request | MetaFi ÷ floor | Nakama ÷ floor |")
print("|---|---|---|---:|---:|---:|---:|---:|")
for row, by in rows.items():
    m = by.get("metafi")
    n = by.get("nakama")
    f = by.get("floor")
    # The CPU's range over the runs beside its median: a ratio moves only outside it.
    cpu_range = lambda v: f" ({min(x[2] for x in v):.1f}–{max(x[2] for x in v):.1f})" if len(v) > 1 else ""
    cell = lambda v: f"{med(v, 0):,.0f}/s, {med(v, 1):.2f} ms, {med(v, 2):.1f} µs{cpu_range(v)}" if v else "not run"
    rate = f"{med(m, 0) / med(n, 0):.1f}×" if m and n else "—"
    cpu = f"{med(n, 2) / med(m, 2):.1f}×" if m and n else "—"
    floor = f"{med(f, 2):.1f} µs{cpu_range(f)}" if f else "—"
    of_floor = lambda v: f"{med(v, 2) / med(f, 2):.2f}×" if v and f else "—"
    print(f"| {row} | {cell(m)} | {cell(n)} | {rate} | {cpu} | {floor} | {of_floor(m)} | {of_floor(n)} |")
EOF

#!/usr/bin/env bash
# MetaFi against a real Nakama in one session (docs/BENCHMARKS.md, "MetaFi and Nakama side by
# side"; issue 21): the same metafi-bench workloads against each server, alternating server by
# server within every run, and a table with both, the ratio of their rates and of their server
# CPU per request. Rows: device registration, device authentication (1,000 users), the echo
# RPC in each runtime (Go/native, Lua, JavaScript) over REST and the socket, the seed match
# (workload 7, Lua: examples/lua's match.lua and get_match on both servers), and for the RPC
# and match rows the floor: `metafi-bench floor`, the same network stack with no server logic
# (for the match: seats handed out in order, and each match's messages delivered once a tick).
#
#   scripts/bench_nakama.sh [register] [auth] [rpc] [match]   (default: all four)
#
# The match row ("The seed match beside Nakama" in docs/BENCHMARKS.md): MATCH_PLAYERS players
# (default 1,000: under the ≈ 1,600 Nakama holds at the tick floor on this machine, with
# PostgreSQL on its core) arrive at MATCH_RATE per second (default 200), find a match with
# MATCH_RPC (default get_match: the seed's finder) and play for MATCH_HOLD seconds (default
# 20). MATCH_ROWS (default "find place") runs the finder's row and a row with the players
# placed instead (`metafi-bench match --cross-node 0`: create_match makes the matches first, 10
# players join each by id), where both servers deliver to full matches (Nakama's finder, with
# no reserved seat in its listings, makes more matches than needed: fewer deliveries per
# message). Its columns are over the steady window (5 s after the last arrival to 2 s before
# the end): deliveries per second (echo + broadcast frames the players received), the worse of
# the echo and broadcast p99 (median over the window's seconds), server CPU per delivered
# message, players seated.
#
# Nakama is built from source by scripts/nakama.sh when its source is on the machine (a bare
# clone of heroiclabs/nakama under /work/.mirror, or NAKAMA_SRC); it loads the repository's
# examples (the same `echo`, `echo_js` and a Go plugin `echo_native`). Without it, only the
# MetaFi rows run and the table says so. Both servers use PostgreSQL (Nakama needs it; MetaFi
# gets a fresh database of the same server per run) with the server and PostgreSQL on core 0
# and metafi-bench on core 1. Server CPU is the server process's (not PostgreSQL's).
#
# Environment: RUNS (default 3), DURATION (seconds per run, default 10), CLIENTS (default 64),
# OUT (report directory), BIN / BENCH (default target/release/…), PORT / METRICS_PORT (MetaFi's;
# Nakama takes PORT+40 and +41, the floor PORT+60), NAKAMA_STATE_DIR / NAKAMA_DATABASE (see
# scripts/nakama.sh: two sessions on one machine need their own). Needs release builds:
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
match_players=${MATCH_PLAYERS:-1000}
match_rate=${MATCH_RATE:-200}
match_hold=${MATCH_HOLD:-20}
match_rpc=${MATCH_RPC:-get_match}
match_rows=${MATCH_ROWS:-find place}
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

# measure_match NAME [ARGS...]: one run of the seed match workload against the started target
# (ARGS: how players get their match); the server's CPU is read from /proc over the steady
# window, so the sign-ins, finders and joins of the arrivals are not counted in a delivered
# message's cost.
measure_match() {
  local run_name=$1
  shift
  local dir=$out/$run_name
  mkdir -p "$dir"
  # MATCH_PLAYERS arrivals exactly: the ramp in whole seconds, the rate to fit it.
  local ramp=$(( (match_players + match_rate - 1) / match_rate ))
  local rate
  rate=$(awk -v p="$match_players" -v s="$ramp" 'BEGIN { printf "%g", p / s }')
  local from=$(( ramp + 5 )) to=$(( ramp + match_hold - 2 ))
  if [ "$to" -le "$from" ]; then
    echo "bench_nakama: MATCH_HOLD=$match_hold leaves no steady window: give it 10 s or more" >&2
    exit 2
  fi
  taskset -c 1 "$bench" match --server "http://127.0.0.1:$target_port" "$@" \
    --users "$match_players" --phase "$rate:${ramp}s" --phase "0:${match_hold}s" \
    --hold "$(( ramp + match_hold ))s" --server-pid "$target_pid" --out "$dir" \
    --progress-every 1s >"$dir/bench.txt" 2>&1 &
  local tool=$!
  # The run's clock (the report's timeline) starts once the users are made: its first
  # progress line marks second 1.
  for _ in $(seq 1 1200); do
    grep -qE '^\[ *1 s /' "$dir/bench.txt" 2>/dev/null && break
    kill -0 "$tool" 2>/dev/null || break
    sleep 0.1
  done
  sleep $(( from - 1 ))
  awk '{print $14 + $15}' "/proc/$target_pid/stat" >"$dir/cpu.start"
  sleep $(( to - from ))
  awk '{print $14 + $15}' "/proc/$target_pid/stat" >"$dir/cpu.end"
  wait "$tool" || {
    echo "bench_nakama: $run_name failed; its output:" >&2
    cat "$dir/bench.txt" >&2
    exit 1
  }
  python3 - "$dir" "$run_name" "$from" "$to" "$(getconf CLK_TCK)" "$match_players" <<'EOF' >>"$out/summary.tsv"
import json, re, statistics, sys
d, name, t0, t1, hz = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
players = int(sys.argv[6])
report = json.load(open(f"{d}/report.json"))
names = [s if isinstance(s, str) else s.get("name") for s in report["timeline_series"]]
# Each timeline point holds the second that ends at its `at`.
steady = [p for p in report["timeline"] if t0 < round(p["at"]) <= t1]
delivered, p99 = 0, 0.0
for series in ("echo", "broadcast"):
    i = names.index(series)
    seconds = [p["series"][i] for p in steady if p["series"][i]["count"] > 0]
    delivered += sum(s["count"] for s in seconds)
    if seconds:
        p99 = max(p99, statistics.median(s["p99_ms"] for s in seconds))
cpu = (float(open(f"{d}/cpu.end").read()) - float(open(f"{d}/cpu.start").read())) / hz
seats = next((n for n in report.get("notes", []) if n.startswith("seats:")), "")
# Of all the players: one whose finder failed never joined, and the tool's line leaves it out.
m = re.match(r"seats: (\d+) of", seats)
seated = f"{int(m.group(1)):,} of {players:,} seated" if m else "seats not reported"
print(f"{name}\t{delivered / (t1 - t0):.1f}\t{p99:.2f}\t{1e6 * cpu / max(delivered, 1):.2f}\t{seated}")
EOF
  tail -n 1 "$out/summary.tsv"
}

parts=${*:-register auth rpc match}
# The floor answers only the RPC and match rows; FLOOR=0 leaves it out.
floor=""
if [ "${FLOOR:-1}" = 1 ] && [[ " $parts " == *" rpc "* || " $parts " == *" match "* ]]; then floor=1; fi
servers="metafi${have_nakama:+ nakama}${floor:+ floor}"
echo "bench_nakama: $runs run(s) of ${duration}s, $clients clients; servers: $servers; reports in $out"
uptime
for r in $(seq 1 "$runs"); do
  for target in $servers; do
    for part in $parts; do
      if [ "$target" = floor ] && [ "$part" != rpc ] && [ "$part" != match ]; then continue; fi
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
        match)
          for how in $match_rows; do
            case "$how" in
              find) measure_match "$target:seed match ($match_rpc, $match_players players):$r" \
                --rpc "$match_rpc" ;;
              place) measure_match "$target:seed match (placed 10 a match, $match_players players):$r" \
                --cross-node 0 ;;
              *) echo "bench_nakama: unknown MATCH_ROWS entry $how (find, place)" >&2; exit 2 ;;
            esac
          done
          ;;
        *) echo "bench_nakama: unknown part $part (register, auth, rpc, match)" >&2; exit 2 ;;
      esac
      stop_target "$target"
    done
  done
done

# The table: medians of each row's runs, and the ratios.
python3 - "$out/summary.tsv" <<'EOF' | tee "$out/table.md"
import sys, statistics
rows = {}
# A match row's fifth field: the players seated, each run's.
notes = {}
for line in open(sys.argv[1]):
    name, rate, p99, cpu, *note = line.rstrip("\n").split("\t")
    target, row, _ = name.split(":")
    rows.setdefault(row, {}).setdefault(target, []).append((float(rate), float(p99), float(cpu)))
    if note:
        notes.setdefault((row, target), []).append(note[0])
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
    note = lambda t: ", " + " / ".join(notes[(row, t)]) if (row, t) in notes else ""
    cell = lambda v, t: f"{med(v, 0):,.0f}/s, {med(v, 1):.2f} ms, {med(v, 2):.1f} µs{cpu_range(v)}{note(t)}" if v else "not run"
    rate = f"{med(m, 0) / med(n, 0):.1f}×" if m and n else "—"
    cpu = f"{med(n, 2) / med(m, 2):.1f}×" if m and n else "—"
    floor = f"{med(f, 2):.1f} µs{cpu_range(f)}" if f else "—"
    of_floor = lambda v: f"{med(v, 2) / med(f, 2):.2f}×" if v and f else "—"
    print(f"| {row} | {cell(m, 'metafi')} | {cell(n, 'nakama')} | {rate} | {cpu} | {floor} | {of_floor(m)} | {of_floor(n)} |")
EOF

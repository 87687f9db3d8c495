#!/usr/bin/env bash
# Networked bots in a served world (docs/WORLD.md, "Serving the world"; issue 19): for each bot
# count, a fresh metafi with one world on an open map sized for that count, and metafi-bench
# world with that many bots. Prints one Markdown row per count: snapshots received per bot per
# second against the tick rate, command → applying snapshot p50/p99, the server's time per tick
# by phase (its /debug/worlds means), dropped snapshots, bytes per bot each way, CPU.
#
#   COUNTS="100 500 1000" DURATION=20 scripts/bench_world.sh [METAFI_BIN] [BENCH_BIN]
#
# SERVER_CORES / BOT_CORES (taskset lists; default 0 and 1: the server on one core, the bots on
# the other); WORLD_THREADS (default: the server's core count); PORT (default 18410; the metrics
# port is PORT+1, QUIC PORT+2). Release builds by default.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin=${1:-target/release/metafi}
bench=${2:-target/release/metafi-bench}
counts=${COUNTS:-"100 500 1000"}
duration=${DURATION:-20}
server_cores=${SERVER_CORES:-0}
bot_cores=${BOT_CORES:-1}
threads=${WORLD_THREADS:-$(echo "$server_cores" | tr ',' '\n' | wc -l)}
port=${PORT:-18410}
metrics_port=$((port + 1))
out=${OUT:-$(mktemp -d -t metafi-bench-world.XXXXXX)}
mkdir -p "$out"
server=""
data=""
stop_server() {
  if [ -n "$server" ]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  server=""
  [ -z "$data" ] || rm -rf "$data"
  data=""
}
trap stop_server EXIT

echo "| bots | snapshots / bot / s (of 20) | command → snapshot p50 / p99 ms | server ms per tick: receive / physics / commands / merge / snapshots / send | dropped snapshots | bytes per bot per s in / out (tool side) | server CPU cores |"
echo "|---|---|---|---|---|---|---|"
for n in $counts; do
  data=$(mktemp -d -t metafi-world-data.XXXXXX)
  taskset -c "$server_cores" "$bin" serve --port "$port" --metrics-port "$metrics_port" \
    --quic-port $((port + 2)) --console-port 0 --data-dir "$data" --set session.token_expiry_sec=3600 \
    --set logger.level=warn --set world.enabled=true --set world.map=open \
    --set world.max_players="$n" --set world.threads="$threads" \
    --set world.max_outbox_messages=8 --set socket.outgoing_queue_size=100000 \
    >"$out/server-$n.log" 2>&1 &
  server=$!
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$port/healthcheck" >/dev/null && break
    kill -0 "$server" 2>/dev/null || { cat "$out/server-$n.log" >&2; exit 1; }
    sleep 0.1
  done
  rate=$((n / 10 > 50 ? n / 10 : 50))
  ramp=$(((n + rate - 1) / rate))
  taskset -c "$bot_cores" "$bench" world --server "http://127.0.0.1:$port" --server-pid "$server" \
    --users "$n" --map open --format protobuf --phase "$rate:${ramp}s" --phase "0:${duration}s" \
    --hold "$((duration + ramp))s" --progress-every 60s \
    >"$out/bench-$n.txt" 2>&1 || true
  curl -sf "http://127.0.0.1:$metrics_port/debug/worlds" >"$out/worlds-$n.json" || echo '{}' >"$out/worlds-$n.json"
  stop_server
  python3 - "$n" "$out" <<'PY'
import json, re, sys
n, out = sys.argv[1], sys.argv[2]
text = open(f"{out}/bench-{n}.txt").read()
def grab(pattern, default="?"):
    m = re.search(pattern, text)
    return m.group(1) if m else default
rate = grab(r"snapshots received per bot per second: ([0-9.]+)")
cmd = re.search(r"^\s*command\s+[0-9,]+\s.*$", text, re.M)
p50 = p99 = "?"
if cmd:
    scale = {"µs": 0.001, "ms": 1.0, "s": 1000.0}
    cols = [float(v.replace(",", "")) * scale[u]
            for v, u in re.findall(r"([0-9][0-9,]*(?:\.[0-9]+)?) (µs|ms|s)\b", cmd.group(0))]
    # time columns: high 10s mean, low 10s mean, mean, p50, p90, p99, max
    if len(cols) >= 7:
        p50, p99 = f"{cols[3]:.1f}", f"{cols[5]:.1f}"
worlds = json.load(open(f"{out}/worlds-{n}.json")).get("worlds", {})
w = next(iter(worlds.values()), {})
mean = w.get("mean_phase_seconds", {})
phases = " / ".join(f"{mean.get(k, 0) * 1000:.2f}" for k in ["receive", "physics", "commands", "merge", "snapshots", "send"])
sent = grab(r"sent: highest [^,]+, total ([0-9.]+ [kMG]?B)")
recv = grab(r"received: highest [^,]+, total ([0-9.]+ [kMG]?B)")
cpu = grab(r"server \(pid \d+\): [0-9.]+ CPU-s, ([0-9.]+) cores used")
print(f"| {n} | {rate} | {p50} / {p99} | {phases} | {w.get('dropped_snapshots', '?')} | {recv} / {sent} total | {cpu} |")
PY
done
echo "raw output: $out" >&2

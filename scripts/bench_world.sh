#!/usr/bin/env bash
# Networked bots in a served world (docs/WORLD.md, "Serving the world"; issue 19): for each bot
# count, a fresh metafi with one world on an open map sized for that count, and metafi-bench
# world with that many bots: a ramp (a tenth of the bots per second, at least 50/s), then
# DURATION seconds with all of them in — the measured phase. Every figure is of that phase:
# metafi-bench reads the server's /debug/worlds once a second and the server's threads'
# CPU (/proc) at its start and end, while the bots are still in.
#
# Prints two Markdown tables: one row per count of snapshots received per bot per second against
# the tick rate, command → applying snapshot p50/p99, the server's mean time per tick by phase,
# dropped snapshots, bytes per bot each way and the server's CPU; then the server's CPU by thread
# group and its simulation / network split (docs/BENCHMARKS.md, "The world served"). Writes
# SVG charts of the sweep (metafi-bench world-charts) and each run's report into OUT.
#
#   COUNTS="100 500 1000" DURATION=20 scripts/bench_world.sh [METAFI_BIN] [BENCH_BIN]
#
# SERVER_CORES / BOT_CORES (taskset lists; default 0 and 1: the server on one core, the bots on
# the other); WORLD_THREADS (default: the server's core count); PORT (default 18410; the metrics
# port is PORT+1, QUIC PORT+2, the console PORT+3); OUT (default: a new temporary directory);
# LABEL (the charts' subtitle). VIEW_SCREENSHOT=1 also starts the console and, VIEW_AT seconds
# after 90 % of the bots are in (default: half of DURATION), takes a headless Chromium
# screenshot of the world's live view (tests/compat/console/world_screenshot.mjs, on BOT_CORES)
# into OUT/world-view-N.png — the page watches from the start of the run and costs the server
# the view's frames, so such a run is not a clean measurement. Release builds by default.
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
console_port=$((port + 3))
out=${OUT:-$(mktemp -d -t metafi-bench-world.XXXXXX)}
label=${LABEL:-"server on cores $server_cores, bots on cores $bot_cores"}
view=${VIEW_SCREENSHOT:-0}
mkdir -p "$out"
out=$(cd "$out" && pwd)
server=""
data=""
shot_pid=""
stop_server() {
  if [ -n "$shot_pid" ]; then
    kill "$shot_pid" 2>/dev/null || true
    wait "$shot_pid" 2>/dev/null || true
  fi
  shot_pid=""
  if [ -n "$server" ]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  server=""
  [ -z "$data" ] || rm -rf "$data"
  data=""
}
trap stop_server EXIT

console_args=(--console-port 0)
if [ "$view" = 1 ]; then
  [ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || { echo "VIEW_SCREENSHOT=1 needs Chromium (scripts/world_view.sh installs it)" >&2; exit 1; }
  [ -d tests/compat/node_modules/puppeteer-core ] ||
    (cd tests/compat && PUPPETEER_SKIP_DOWNLOAD=true npm ci --no-audit --no-fund --loglevel=error)
  console_config="$out/console.toml"
  cat >"$console_config" <<'TOML'
[console]
users = [{ username = "admin", password = "console-admin-pw", role = "admin" }]
TOML
  console_args=(--config "$console_config" --console-port "$console_port")
fi

table="$out/table.md"
split="$out/split.md"
echo "| bots | snapshots / bot / s (of 20) | command → snapshot p50 / p99 ms | server ms per tick: receive / physics / commands / merge / snapshots / send | dropped snapshots | bytes per bot per s in / out (tool side) | server CPU cores |" | tee "$table"
echo "|---|---|---|---|---|---|---|" | tee -a "$table"
{
  echo "| bots | server CPU cores: world threads / IO threads / other | simulation / network cores | simulation / network µs per player per tick | simulation : network | acknowledgement age mean / max ticks | tick max / lateness max ms | skipped ticks |"
  echo "|---|---|---|---|---|---|---|---|"
} >"$split"
for n in $counts; do
  data=$(mktemp -d -t metafi-world-data.XXXXXX)
  taskset -c "$server_cores" "$bin" serve --port "$port" --metrics-port "$metrics_port" \
    --quic-port $((port + 2)) "${console_args[@]}" --data-dir "$data" --set session.token_expiry_sec=3600 \
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
  if [ "$view" = 1 ]; then
    # Chromium starts with the bots and waits on the page for 90 % of them (the ramp), then
    # VIEW_AT seconds more, so the picture is taken with the bots in whatever the setup took.
    at=${VIEW_AT:-$((duration / 2))}
    METAFI_CONSOLE_PORT=$console_port WORLD_VIEW_SHOT="$out/world-view-$n.png" \
      WORLD_VIEW_MIN_PLAYERS=$((n * 9 / 10)) WORLD_VIEW_DELAY_MS=$((at * 1000)) \
      WORLD_VIEW_TIMEOUT_MS=$(((ramp + duration + 120) * 1000)) taskset -c "$bot_cores" \
      node tests/compat/console/world_screenshot.mjs >"$out/world-view-$n.log" 2>&1 &
    shot_pid=$!
  fi
  taskset -c "$bot_cores" "$bench" world --server "http://127.0.0.1:$port" --server-pid "$server" \
    --server-metrics "http://127.0.0.1:$metrics_port" \
    --users "$n" --map open --format protobuf --phase "$rate:${ramp}s" --phase "0:${duration}s" \
    --hold "$((duration + ramp))s" --progress-every 60s --label "$label, $n bots" --out "$out/run-$n" \
    >"$out/bench-$n.txt" 2>&1 || true
  if [ -n "$shot_pid" ]; then
    if wait "$shot_pid"; then
      echo "view at $n bots: $(tail -1 "$out/world-view-$n.log")" >&2
    else
      echo "view at $n bots: no screenshot; $out/world-view-$n.log:" >&2
      tail -5 "$out/world-view-$n.log" >&2
    fi
    shot_pid=""
  fi
  stop_server
  python3 - "$n" "$out" "$table" "$split" <<'PY'
import json, sys
n, out, table, split = sys.argv[1:5]
try:
    report = json.load(open(f"{out}/run-{n}/report.json"))
except (OSError, ValueError):
    report = {}
f = report.get("figures") or {}
s = f.get("server") or {}
c = f.get("cpu") or {}
def num(v, fmt):
    return "?" if v is None else format(v, fmt)
tick = f.get("tick_rate")
rate = num(f.get("snapshots_per_bot_per_sec"), ".2f")
lat = f"{num(f.get('command_p50_ms'), '.1f')} / {num(f.get('command_p99_ms'), '.1f')}"
phases = s.get("phase_ms") or {}
ph = " / ".join(num(phases.get(k), ".2f") for k in ["receive", "physics", "commands", "merge", "snapshots", "send"])
dropped = num(s.get("dropped_snapshots"), "d")
io = f"{num(f.get('bytes_in_per_bot_per_sec'), ',.0f')} / {num(f.get('bytes_out_per_bot_per_sec'), ',.0f')}"
cores = num(c.get("cores", (report.get("server_usage") or {}).get("cores_used")), ".2f")
bots = f"{n}" if not f else f"{n} ({f.get('bots', 0):.0f} in)"
row = f"| {bots} | {rate} | {lat} | {ph} | {dropped} | {io} | {cores} |"
print(row)
open(table, "a").write(row + "\n")
split_row = (
    f"| {n} | {num(c.get('world_cores'), '.2f')} / {num(c.get('io_cores'), '.2f')} / {num(c.get('other_cores'), '.2f')}"
    f" | {num(c.get('simulation_cores'), '.2f')} / {num(c.get('network_cores'), '.2f')}"
    f" | {num(c.get('simulation_us_per_player_tick'), '.1f')} / {num(c.get('network_us_per_player_tick'), '.1f')}"
    f" | {num(100 * c['simulation_share'] if 'simulation_share' in c else None, '.0f')} : {num(100 - 100 * c['simulation_share'] if 'simulation_share' in c else None, '.0f')}"
    f" | {num(s.get('ack_age_mean_ticks'), '.2f')} / {num(s.get('ack_age_max_ticks'), 'd')}"
    f" | {num(s.get('tick_ms_max_seen'), '.2f')} / {num(s.get('lateness_ms_max_seen'), '.2f')}"
    f" | {num(s.get('skipped_ticks'), 'd')} |"
)
open(split, "a").write(split_row + "\n")
for p in f.get("problems") or []:
    print(f"{n} bots: {p}", file=sys.stderr)
PY
done
echo
cat "$split"
reports=("$out"/run-*/report.json)
if [ -e "${reports[0]}" ]; then
  "$bench" world-charts --out "$out" --label "$label" "${reports[@]}" 2>&1 | sed 's/^/charts: /' >&2 || true
fi
echo "raw output: $out (table.md, split.md, world-*.svg, run-N/report.json)" >&2

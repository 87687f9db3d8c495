#!/usr/bin/env bash
# Smoke test of metafi-bench: starts a throwaway metafi and runs every workload the server
# supports for ~3 s at low load. A workload fails the script when the tool reports more than 1 %
# errors or no success at all. A workload whose server part is missing (no RPC of that id, no
# realtime socket) is skipped with a line saying so.
#
#   scripts/bench-smoke.sh [METAFI_BIN] [BENCH_BIN]     (defaults: the debug builds)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=scripts/lib/server.sh
. scripts/lib/server.sh

bin=${1:-target/debug/metafi}
bench=${2:-target/debug/metafi-bench}
flags=(--set session.token_expiry_sec=600)
# examples/ holds the echo modules (lua/echo.lua, js/…); echo_native is compiled in with the
# `examples` feature, which METAFI_BIN must have.
if "$bin" config default | grep -q '^\[runtime\]'; then
  flags+=(--set runtime.path=examples)
fi
# A served world for the world workload (docs/WORLD.md), on one thread of its own.
has_world=false
if "$bin" config default | grep -q '^\[world\]'; then
  flags+=(--set world.enabled=true --set world.threads=1)
  has_world=true
fi

trap stop_server EXIT
start_server "$bin" "${flags[@]}"
require_examples "bench smoke"
server="http://127.0.0.1:$SERVER_PORT"
echo "bench smoke: metafi on port $SERVER_PORT"

passed=0
skipped=0
run() {
  local workload=$1
  shift
  echo "==> metafi-bench $workload $*"
  "$bench" "$workload" --server "$server" --server-pid "$SERVER_PID" \
    --max-error-ratio 0.01 --min-successes 1 --progress-every 10s "$@"
  passed=$((passed + 1))
}
skip() {
  echo "SKIPPED: $*"
  skipped=$((skipped + 1))
}

# probes: a session, then whether an RPC id exists and whether /ws upgrades
token=$(curl -sf -u defaultkey: -H 'content-type: application/json' \
  -d '{"id":"bench-smoke-probe-device"}' \
  "$server/v2/account/authenticate/device?create=true" | sed -E 's/.*"token":"([^"]+)".*/\1/')
has_rpc() {
  [ "$(curl -s -o /dev/null -w '%{http_code}' -H "authorization: Bearer $token" \
    -H 'content-type: application/json' -d '"{}"' "$server/v2/rpc/$1")" = 200 ]
}
has_socket() {
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 -H 'Connection: Upgrade' \
    -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' \
    -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' "$server/ws?token=$token" || true)
  [ "$code" = 101 ]
}

run register --clients 4 --duration 3s
run auth --clients 4 --duration 3s --users 50
rpcs=()
for id in echo echo_js echo_native; do
  if has_rpc "$id"; then
    rpcs+=("$id")
    run rpc --id "$id" --clients 4 --duration 3s --users 10
  else
    skip "rpc --id $id: the server has no RPC $id"
  fi
done
if has_socket; then
  run ccu --phase 50:2s --phase 0:1s --hold 10s
  run ccu --phase 50:2s --phase 0:1s --hold 10s --format protobuf
  for id in "${rpcs[@]}"; do
    run rpc --socket --id "$id" --clients 4 --duration 3s --users 10
  done
  # the ESL consolidation steps: two 12-player matches at 64 ticks/s (the first one expensive),
  # a short step each; the tool fails on any player error or when no input was timed
  if grep -q 'runtime ready.*esl_create_native' "$SERVER_LOG"; then
    echo "==> metafi-bench esl --max-matches 2 --expensive 1"
    # with --out, so the run also draws its two charts (a chart that cannot be drawn fails it)
    esl_out=$(mktemp -d -t metafi-smoke-esl.XXXXXX)
    "$bench" esl --server "$server" --server-pid "$SERVER_PID" --max-matches 2 --expensive 1 \
      --step 2s --warmup 1s --out "$esl_out"
    for chart in esl-latency.svg esl-cpu.svg; do
      [ -s "$esl_out/$chart" ] || { echo "bench smoke: esl drew no $chart in $esl_out" >&2; exit 1; }
    done
    rm -rf "$esl_out"
    passed=$((passed + 1))
  else
    skip "esl: the server has no RPC esl_create_native (build metafi with --features examples)"
  fi
  if has_rpc get_match; then
    run match --users 20 --phase 10:2s --phase 0:2s --hold 3s
  else
    skip "match: the server has no RPC get_match (the match engine's example module)"
  fi
  if $has_world; then
    # with the metrics listener: the world's figures read in the measured phase (docs/BENCH.md)
    metrics_args=()
    [ -z "${SERVER_METRICS_PORT:-}" ] || metrics_args=(--server-metrics "http://127.0.0.1:$SERVER_METRICS_PORT")
    run world --users 10 --phase 10:1s --phase 0:3s --hold 3s --format protobuf "${metrics_args[@]}"
  else
    skip "world: the server serves no worlds"
  fi
else
  skip "ccu, rpc --socket, match: the server has no realtime socket at /ws"
fi
echo "bench smoke: $passed passed, 0 failed, $skipped skipped"

#!/usr/bin/env bash
# Runs the nakama-js cluster suite (tests/compat/cluster.test.mjs): three metafi nodes on one
# fresh PostgreSQL database and one NATS, clients spread over them (METAFI_TEST_PORTS).
#
#   scripts/cluster.sh [BIN] [extra serve flags for every node...]
#
# BIN defaults to target/debug/metafi and must be built with `--features examples` (the suite
# calls the example modules). NATS: METAFI_TEST_NATS_URL when set, else scripts/nats.sh (started
# here and stopped at the end). PostgreSQL: a new database on scripts/postgres.sh's server.
# CLUSTER_BENCH=path/to/metafi-bench also runs a short metafi-bench smoke against the three
# nodes (users spread over them; fails on any error or a node that got no success).
# CLUSTER_KEEP=1 leaves the nodes running after the suite (their ports are printed) for trying
# things by hand; Ctrl-C stops them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=scripts/lib/server.sh
. scripts/lib/server.sh
# shellcheck source=scripts/lib/node_test.sh
. scripts/lib/node_test.sh

bin=${1:-target/debug/metafi}
shift || true

(cd tests/compat && {
  [ node_modules/.package-lock.json -nt package-lock.json ] ||
    PUPPETEER_SKIP_DOWNLOAD=true npm ci --no-audit --no-fund --loglevel=error
})

started_nats=""
if [ -n "${METAFI_TEST_NATS_URL:-}" ]; then
  nats=$METAFI_TEST_NATS_URL
else
  # A NATS server of this script's own (its own state directory, so `stop` ends only it): a
  # shared one that other tests or scripts use is never stopped from here. (Not exported: the
  # server refuses METAFI_* variables that are not its configuration.)
  nats_dir=$(mktemp -d -t metafi-cluster-nats.XXXXXX)
  nats=$(METAFI_NATS_DIR=$nats_dir scripts/nats.sh)
  started_nats=1
fi
db=$(METAFI_PG_DATABASE="metafi_cluster_$(date +%s)_$$" scripts/postgres.sh)

modules=$(mktemp -d -t metafi-cluster-modules.XXXXXX)
cp -r examples/lua examples/js "$modules/"
cp -r tests/compat/modules/. "$modules/"

pids=()
nodes_ports=()
datas=()
logs=()
stop_nodes() {
  local i
  for i in "${!pids[@]}"; do
    SERVER_PID=${pids[$i]} SERVER_DATA=${datas[$i]} SERVER_LOG=${logs[$i]}
    stop_server
  done
  pids=()
  rm -rf "$modules"
  if [ -n "$started_nats" ]; then METAFI_NATS_DIR=$nats_dir scripts/nats.sh stop; rm -rf "$nats_dir"; fi
}
trap stop_nodes EXIT

# A subject prefix of this run's own, so it never meets another cluster on a shared NATS.
prefix="cluster$$"
for n in 1 2 3; do
  start_server "$bin" --database-url "$db" --cluster "$nats" --node "n$n" \
    --set cluster.subject_prefix="$prefix" --set runtime.path="$modules" \
    --set session.single_socket=true --set matchmaker.interval_sec=1 "$@" || {
    # (a node that never became ready may still run)
    kill "${SERVER_PID:-}" 2>/dev/null || true
    exit 1
  }
  pids+=("$SERVER_PID")
  nodes_ports+=("$SERVER_PORT")
  datas+=("$SERVER_DATA")
  logs+=("$SERVER_LOG")
  if [ "$n" = 1 ]; then require_examples cluster; fi
  echo "cluster: node n$n on port $SERVER_PORT (metrics $SERVER_METRICS_PORT, log $SERVER_LOG)"
done
SERVER_PID=""

# Every node hears the two others before the suite starts (metafi_cluster_peers 2).
for i in "${!logs[@]}"; do
  metrics=$(grep -m1 "metrics at /metrics" "${logs[$i]}" | sed -E 's/.*:([0-9]+)\).*/\1/')
  for _ in $(seq 1 100); do
    peers=$(curl -sf "http://127.0.0.1:$metrics/metrics" | awk '$1 == "metafi_cluster_peers" { print $2 }' || true)
    [ "${peers:-0}" = 2 ] && break
    sleep 0.1
  done
  if [ "${peers:-0}" != 2 ]; then
    echo "cluster: node n$((i + 1)) sees ${peers:-0} peers, not 2, after 10 s; its log:" >&2
    cat "${logs[$i]}" >&2
    exit 1
  fi
done

list=$(IFS=,; echo "${nodes_ports[*]}")
echo "cluster: three nodes ready (ports $list)"
status=0
(cd tests/compat && METAFI_TEST_SERVER=metafi METAFI_TEST_PORT=${nodes_ports[0]} METAFI_TEST_PORTS=$list \
  timeout "${COMPAT_TIMEOUT_SEC:-300}" node --test --test-concurrency=1 $force_exit --test-reporter=spec \
  cluster.test.mjs) || status=$?
if [ "$status" = 0 ] && [ -n "${CLUSTER_BENCH:-}" ]; then
  servers=$(printf 'http://127.0.0.1:%s,' "${nodes_ports[@]}")
  servers=${servers%,}
  pid_list=$(IFS=,; echo "${pids[*]}")
  for workload in "register --clients 6" "auth --clients 6 --users 30"; do
    echo "==> metafi-bench $workload against three nodes"
    # shellcheck disable=SC2086 # the workload's words are meant to split
    out=$("$CLUSTER_BENCH" $workload --duration 2s --server "$servers" --server-pid "$pid_list" \
      --max-error-ratio 0 --progress-every 60s) || { echo "$out"; status=1; break; }
    echo "$out" | sed -n '/^per server/,/^$/p'
    # every node served some of the users (round-robin over the list)
    if [ "$(echo "$out" | grep -cE '^  http://.*successes [1-9]')" != 3 ]; then
      echo "cluster: a node got no successes:" >&2
      echo "$out" >&2
      status=1
      break
    fi
  done
fi
if [ "${CLUSTER_KEEP:-}" = 1 ]; then
  echo "cluster: nodes kept running on ports $list (NATS $nats); Ctrl-C stops them"
  while sleep 3600; do :; done
fi
exit "$status"

#!/usr/bin/env bash
# One node against a two-node cluster (issue 18, docs/CLUSTER.md "Benchmarks against several
# nodes"): the seed's workloads with the same server budget — the one node, or both nodes of
# the cluster, on core 0; metafi-bench on core 1; PostgreSQL and NATS unpinned. Users are spread
# round-robin over the nodes, so in the cluster half of every interaction crosses nodes (match
# players are placed: the matches are made on every node first, and in a cluster half of each
# node's players join a match of the next node by id, `metafi-bench match --cross-node 0.5`;
# in the other layouts every player joins a match of its own node; chat and match traffic
# crosses NATS). Reports, per row, the rate, the p99 and the server CPU per request (the sum over the
# nodes): the cluster's overhead is the ratio of the two CPU columns.
#
#   scripts/bench_cluster.sh                 (RUNS=3 DURATION=8 by default)
#
# Environment: BIN / BENCH (default target/release/…, build them as in bench_inline.sh), RUNS,
# DURATION (seconds per run), CLIENTS (default 64), OUT (report directory), PORT_BASE (node n
# listens on PORT_BASE + 10n, default 7500), WORKLOADS (a subset of "register auth rpc-rest
# rpc-socket ccu match relay", default all), LAYOUTS (a list of one, pair, cluster, triple,
# cluster3; default "one cluster": pair and triple are 2 and 3 nodes that are not a cluster,
# the baseline of cluster and cluster3 on the same core). The relay rows compare a message between two
# players on one node with one that crosses nodes (metafi-bench relay: same_node, cross_node).
# Needs PostgreSQL (scripts/postgres.sh) and NATS (scripts/nats.sh; started here if
# METAFI_TEST_NATS_URL is unset).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

runs=${RUNS:-3}
duration=${DURATION:-8}
clients=${CLIENTS:-64}
out=${OUT:-$(mktemp -d -t metafi-bench-cluster.XXXXXX)}
mkdir -p "$out"
bin=${BIN:-target/release/metafi}
bench=${BENCH:-target/release/metafi-bench}
for b in "$bin" "$bench"; do
  [ -x "$b" ] || { echo "bench_cluster: $b is missing: build it first (see the header)" >&2; exit 1; }
done
nats=${METAFI_TEST_NATS_URL:-}
started_nats=""
if [ -z "$nats" ]; then
  # A NATS server of this script's own (its own state directory, so `stop` ends only it): a
  # shared one that other tests or scripts use is never stopped from here. (Not exported: the
  # server refuses METAFI_* variables that are not its configuration.)
  nats_dir=$out/nats
  nats=$(METAFI_NATS_DIR=$nats_dir scripts/nats.sh)
  started_nats=1
fi

pids=()
datas=()
stop_nodes() {
  local pid
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  pids=()
  for d in "${datas[@]}"; do rm -rf "$d"; done
  datas=()
}
finish() {
  stop_nodes
  if [ -n "$started_nats" ]; then METAFI_NATS_DIR=$nats_dir scripts/nats.sh stop; fi
}
trap finish EXIT

# node_count LAYOUT: one is 1 node; pair (not clustered) and cluster 2; triple (not clustered)
# and cluster3 3 — the layouts beside which a cluster's own cost is read.
node_count() {
  case $1 in
    one) echo 1 ;;
    pair | cluster) echo 2 ;;
    triple | cluster3) echo 3 ;;
  esac
}

# start_nodes LAYOUT: the layout's nodes on core 0 on a fresh database (above); sets servers/pids.
start_nodes() {
  local layout=$1 count db n port data
  count=$(node_count "$layout")
  db=$(METAFI_PG_DATABASE="metafi_bench_cluster_$(date +%s%N)" scripts/postgres.sh)
  servers=""
  for n in $(seq 1 "$count"); do
    port=$((${PORT_BASE:-7500} + 10 * n))
    data=$(mktemp -d -t metafi-bench-data.XXXXXX)
    datas+=("$data")
    local cluster=()
    if [[ $layout == cluster* ]]; then cluster=(--cluster "$nats" --node "n$n" --set "cluster.subject_prefix=bench$$"); fi
    taskset -c 0 "$bin" serve --port "$port" --metrics-port $((port + 1)) --quic-port $((port + 2)) \
      --data-dir "$data" --database-url "$db" "${cluster[@]}" \
      --set runtime.path=examples --set session.token_expiry_sec=3600 --set logger.level=warn --set console.enabled=false \
      >"$out/node$n.log" 2>&1 &
    pids+=("$!")
    for _ in $(seq 1 200); do
      curl -sf "http://127.0.0.1:$port/healthcheck" >/dev/null && break
      kill -0 "${pids[-1]}" 2>/dev/null || { cat "$out/node$n.log" >&2; exit 1; }
      sleep 0.1
    done
    servers+="${servers:+,}http://127.0.0.1:$port"
  done
  # A cluster's nodes hear each other before the run (the matchmaker pool and listings settle).
  [[ $layout == cluster* ]] && sleep 2
  return 0
}

# run NAME WORKLOAD-ARGS...: one run against the nodes started; prints its rows.
run() {
  local name=$1
  shift
  local dir=$out/$name
  mkdir -p "$dir"
  taskset -c 1 "$bench" "$@" --server "$servers" --server-pid "$(IFS=,; echo "${pids[*]}")" \
    --out "$dir" >"$dir/bench.txt" 2>&1 || {
    echo "bench_cluster: $name failed; its output:" >&2
    cat "$dir/bench.txt" >&2
    exit 1
  }
  python3 - "$dir/report.json" "$name" <<'PY' | tee -a "$out/summary.txt"
import json, sys
report = json.load(open(sys.argv[1]))
name = sys.argv[2]
usage = report.get("server_usage") or {}
cpu = usage.get("cpu_secs") or float("nan")
rows = [r for r in report["requests"] if r["count"] > 0]
main = {"match": ["echo", "broadcast"], "relay": ["same_node", "cross_node"]}.get(report["workload"]) or [max(rows, key=lambda r: r["count"])["name"]]
count = sum(r["count"] for r in rows if r["name"] in main)
for r in rows:
    if r["name"] in main:
        print(f"{name}\t{r['name']}\t{r['mean_rate']:.1f}/s\tp50 {r.get('p50_ms', float('nan')):.2f} ms\tp99 {r['p99_ms']:.2f} ms")
print(f"{name}\tserver CPU\t{cpu:.2f} s\t{1e6 * cpu / count:.1f} us per {'/'.join(main)}\tconnected {report['max_connected']}")
PY
}

workloads() {
  local mode=$1 r=$2
  local want=" ${WORKLOADS:-register auth rpc-rest rpc-socket ccu match relay} "
  [[ $want == *" register "* ]] && run "register-$mode-$r" register --clients "$clients" --duration "${duration}s"
  [[ $want == *" auth "* ]] && run "auth-$mode-$r" auth --clients "$clients" --duration "${duration}s" --users 500
  [[ $want == *" rpc-rest "* ]] && run "rpc-rest-$mode-$r" rpc --id echo_native --clients "$clients" --duration "${duration}s" --users 100
  [[ $want == *" rpc-socket "* ]] && run "rpc-socket-$mode-$r" rpc --socket --id echo_native --clients "$clients" --duration "${duration}s" --users 100
  [[ $want == *" ccu "* ]] && run "ccu-$mode-$r" ccu --phase "1000:5s" --hold "${duration}s"
  # Nodes that are not a cluster cannot join each other's matches: there every player stays home.
  local cross=0
  [[ $mode == cluster* ]] && cross=0.5
  [[ $want == *" match "* ]] && run "match-$mode-$r" match --users 200 --phase "200:5s" --hold "${duration}s" --cross-node "$cross"
  # 200 pairs, 10 messages per second each way: no tick, so the latency is the path's own.
  [[ $want == *" relay "* && $mode != pair && $mode != triple ]] && run "relay-$mode-$r" relay --phase "200:2s" --hold "${duration}s" --interval 100ms
  return 0
}

for r in $(seq 1 "$runs"); do
  for layout in ${LAYOUTS:-one cluster}; do
    case $layout in
      one | pair | cluster | triple | cluster3) ;;
      *) echo "bench_cluster: unknown layout '$layout' in LAYOUTS (one, pair, cluster, triple, cluster3)" >&2; exit 2 ;;
    esac
    start_nodes "$layout"
    workloads "$layout" "$r"
    stop_nodes
  done
done
uptime | tee -a "$out/summary.txt"
echo "bench_cluster: reports in $out"

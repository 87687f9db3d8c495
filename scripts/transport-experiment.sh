#!/usr/bin/env bash
# The seed's transport experiment on real network stacks (docs/TRANSPORT.md, "Experiment").
#
#   sudo scripts/transport-experiment.sh [options]
#
#   --clients "10 25 50 100 150"   client counts
#   --seeds "1 2 3"                seeds (trace, link rates, loss)
#   --strategies "tcp quic1 mro mr m best latest unreliable"
#   --duration 20s                 trace length per run
#   --rate 0.5                     long-run messages per second per player
#   --aoi 150                      area-of-interest radius (world 1000 × 1000)
#   --best-tuning "k=v,…"          client-side QUIC knobs of `best` and `latest`
#   --server-quic "k=v …"          server [quic] knobs (default latest_settle_ms=1000)
#   --results DIR                  run results (default target/transport-experiment)
#   --docs DIR                     report.md and charts (default docs/transport)
#   --no-build                     use the release binaries as they are
#   --storm                        also: per seed, the largest client count connects at once over the
#                                  measured links (QUIC, then WebSocket); results in storm-*.json
#
# Needs root (network namespaces, TUN devices). Builds the release binaries, then per seed:
# creates two namespaces (server, clients) joined by metafi-linkemu with the seed's links
# (server 600 kbit/s + 70 ms; clients 64–128 kbit/s + 70 ms, 4 % loss each way), starts
# `metafi serve` in the server namespace, checks the path with UDP probes, and replays the
# seed's trace for every client count and strategy, in rotating order. Everything it made is
# removed at exit, also on failure or Ctrl-C. Traffic stays inside the two namespaces.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

clients_list="10 25 50 100 150"
seeds="1 2 3"
strategies="tcp quic1 mro mr m best latest unreliable"
duration=20s
rate=0.5
aoi=150
best_tuning="redundancy_copies=1"
# Server [quic] knobs. latest_settle_ms only concerns the latest-wins class, which only `best`
# uses: the other strategies see the server's defaults.
server_quic="latest_settle_ms=1000"
results=target/transport-experiment
docs=docs/transport
build=1
storm=0
while [ $# -gt 0 ]; do
  case "$1" in
    --clients) clients_list=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --strategies) strategies=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --aoi) aoi=$2; shift 2 ;;
    --best-tuning) best_tuning=$2; shift 2 ;;
    --server-quic) server_quic=$2; shift 2 ;;
    --results) results=$2; shift 2 ;;
    --docs) docs=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    --storm) storm=1; shift ;;
    *) echo "unknown option $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "transport-experiment: needs root (namespaces, TUN devices)" >&2; exit 1; }
[ -e /dev/net/tun ] || { echo "transport-experiment: /dev/net/tun is missing" >&2; exit 1; }

if [ "$build" = 1 ]; then
  cargo build --release -p metafi-server -p metafi-linkemu -p metafi-transport-bench --features examples
fi
metafi=$root/target/release/metafi
linkemu=$root/target/release/metafi-linkemu
bench=$root/target/release/metafi-transport-bench

max_clients=0
for c in $clients_list; do [ "$c" -gt "$max_clients" ] && max_clients=$c; done

tag=$$
ns_srv=mfx-srv-$tag
ns_cli=mfx-cli-$tag
server_ip=10.77.0.1
first_client=10.77.1.1
work=$(mktemp -d /tmp/transport-experiment.XXXXXX)
emu_pid=""
srv_pid=""

stop_pid() {
  local pid=$1
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}
stop_stack() {
  stop_pid "$srv_pid"; srv_pid=""
  stop_pid "$emu_pid"; emu_pid=""
}
cleanup() {
  stop_stack
  ip netns del "$ns_srv" 2>/dev/null || true
  ip netns del "$ns_cli" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$results" "$docs"
started=$(date +%s)
echo "transport-experiment: clients [$clients_list], seeds [$seeds], strategies [$strategies], $duration per run"
lscpu | grep -E '^(Model name|CPU\(s\))' | sed 's/^/  /'

for seed in $seeds; do
  ip netns add "$ns_srv"
  ip netns add "$ns_cli"
  for ns in "$ns_srv" "$ns_cli"; do
    # No TCP metrics cache: every run's connections start from scratch, not from what an
    # earlier run learnt about the path.
    ip netns exec "$ns" sysctl -qw net.ipv4.tcp_no_metrics_save=1
  done
  rm -f "$work/ready"
  nice -n -10 taskset -c 1 "$linkemu" run --server-ns "$ns_srv" --client-ns "$ns_cli" \
    --server-addr $server_ip --first-client $first_client --clients "$max_clients" --seed "$seed" \
    --server-dev "mfx-s$tag" --client-dev "mfx-c$tag" \
    --client-up "rate=64kbit-128kbit,delay=70ms,loss=4%,queue=50p" \
    --client-down "rate=64kbit-128kbit,delay=70ms,loss=4%,queue=50p" \
    --server-up "rate=600kbit,delay=70ms,queue=50p" \
    --server-down "rate=600kbit,delay=70ms,queue=50p" \
    --setup-link "rate=unlimited,delay=70ms,queue=unlimited" \
    --ready-file "$work/ready" --stats "$results/linkemu-seed$seed.stats" \
    > "$results/linkemu-seed$seed.txt" 2>&1 &
  emu_pid=$!
  for _ in $(seq 100); do [ -f "$work/ready" ] && break; sleep 0.1; done
  [ -f "$work/ready" ] || { cat "$results/linkemu-seed$seed.txt" >&2; exit 1; }

  data=$work/data-$seed
  mkdir -p "$data"
  quic_sets=()
  for kv in $server_quic; do quic_sets+=(--set "quic.$kv"); done
  ip netns exec "$ns_srv" nice -n -10 taskset -c 0 "$metafi" serve --address $server_ip --data-dir "$data" \
    --set session.token_expiry_sec=7200 --set runtime.path="$root/examples" \
    --set socket.outgoing_queue_size=4096 --set socket.write_wait_ms=60000 "${quic_sets[@]}" \
    > "$results/server-seed$seed.log" 2>&1 &
  srv_pid=$!
  for _ in $(seq 300); do
    grep -q "metafi is ready" "$results/server-seed$seed.log" 2>/dev/null && break
    kill -0 "$srv_pid" 2>/dev/null || { cat "$results/server-seed$seed.log" >&2; exit 1; }
    sleep 0.1
  done
  fingerprint_file=$data/quic/fingerprint.txt

  # The path as the probes see it on the measured links (round trip: 4 × 70 ms plus
  # serialization). Each run then switches the emulator to its setup link while players sign
  # in and join, and back to the measured links for the replay.
  kill -USR1 "$emu_pid"
  ip netns exec "$ns_srv" "$linkemu" probe-echo --bind $server_ip:7999 --duration 10s &
  echo_pid=$!
  sleep 0.3
  echo "  seed $seed path: $(ip netns exec "$ns_cli" "$linkemu" probe --to $server_ip:7999 \
    --from $first_client --count 20 --interval 50ms --size 100)"
  stop_pid "$echo_pid"

  round=0
  for clients in $clients_list; do
    trace=$results/trace-c$clients-s$seed.json
    "$bench" trace --clients "$clients" --duration "$duration" --seed "$seed" --rate "$rate" --aoi "$aoi" \
      --out "$trace" | sed 's/^/  /'
    # Rotate the order of strategies from one client count to the next, so slow drift of the
    # machine does not always favour the same one.
    read -r -a all <<< "$strategies"
    order=()
    for ((k = 0; k < ${#all[@]}; k++)); do order+=("${all[$(((k + round) % ${#all[@]}))]}"); done
    round=$((round + 1))
    for strategy in "${order[@]}"; do
      quic_flags=()
      if [ "$strategy" != tcp ]; then
        quic_flags=(--quic $server_ip:7352 --quic-fingerprint "@$fingerprint_file")
      fi
      if [ "$strategy" = best ] || [ "$strategy" = latest ]; then
        quic_flags+=(--quic-tuning "$best_tuning")
      fi
      ip netns exec "$ns_cli" nice -n -10 taskset -c 1 "$bench" run --trace "$trace" --strategy "$strategy" \
        --server http://$server_ip:7350 --first-source $first_client "${quic_flags[@]}" \
        --device-prefix "p$seed" --threads 1 --emulator-pid "$emu_pid" --setup-concurrency 64 \
        --out "$results/run-c$clients-s$seed-$strategy.json" | sed 's/^/  /'
    done
  done
  if [ "$storm" = 1 ]; then
    # Every player connects at the same moment over the measured links (sign-ins first, on
    # the setup link).
    for transport in m tcp; do
      quic_flags=()
      [ "$transport" = tcp ] || quic_flags=(--quic $server_ip:7352 --quic-fingerprint "@$fingerprint_file")
      ip netns exec "$ns_cli" nice -n -10 taskset -c 1 "$bench" storm --players "$max_clients" \
        --strategy "$transport" --server http://$server_ip:7350 --first-source $first_client \
        "${quic_flags[@]}" --device-prefix "p$seed" --emulator-pid "$emu_pid" \
        --out "$results/storm-s$seed-$transport.json" | sed 's/^/  /'
    done
  fi
  stop_stack
  ip netns del "$ns_srv"
  ip netns del "$ns_cli"
done

"$bench" report --results "$results" --out "$docs" \
  --note "Hardware: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(($(date +%s) - started)) s end to end."
echo "transport-experiment: done in $(($(date +%s) - started)) s; report in $docs/report.md"
